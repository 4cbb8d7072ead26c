import RouseAPNs
import RouseText

/// The JSON grammar under ``PushAPIJSONReader`` (RFC 8259): whitespace, objects, arrays, strings with their escapes
/// and UTF-8, numbers and literals, each error with what is wrong and the byte offset where.
extension PushAPIJSONReader {
    /// The byte under the cursor, or nil at the end.
    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// A syntax error at the cursor.
    func syntax(_ what: String) -> PushServiceError {
        .request("body is not valid JSON: \(what) at byte \(index)")
    }

    func describe(_ byte: UInt8?) -> String { JSONText.describe(byte) }

    /// `'x'` for a visible ASCII byte, `byte 0xNN` for others.
    static func name(_ byte: UInt8) -> String { JSONText.name(byte) }

    mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// An object's members (the cursor on its `{`): `body` reads each value, the cursor on it.
    mutating func members(
        _ body: (inout PushAPIJSONReader, String) throws(PushServiceError) -> Void
    ) throws(PushServiceError) {
        index += 1
        skipSpace()
        if peek == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            guard peek == UInt8(ascii: "\"") else { throw syntax("\(describe(peek)) where a field name belongs") }
            let key = try string()
            skipSpace()
            guard peek == UInt8(ascii: ":") else { throw syntax("\(describe(peek)) where ':' belongs") }
            index += 1
            skipSpace()
            try body(&self, key)
            skipSpace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
                skipSpace()
            case UInt8(ascii: "}"):
                index += 1
                return
            default: throw syntax("\(describe(peek)) where ',' or '}' belongs")
            }
        }
    }

    /// An array's elements (the cursor on its `[`): `body` reads each, the cursor on it.
    mutating func elements(
        depth: Int, _ body: (inout PushAPIJSONReader) throws(PushServiceError) -> Void
    ) throws(PushServiceError) {
        index += 1
        skipSpace()
        if peek == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            try body(&self)
            skipSpace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
                skipSpace()
            case UInt8(ascii: "]"):
                index += 1
                return
            default: throw syntax("\(describe(peek)) where ',' or ']' belongs")
            }
        }
    }

    /// Checks one value (the cursor on it; `depth` its level) and moves past it; with `copy`, appends its bytes
    /// without the whitespace between tokens.
    mutating func skipValue(depth: Int, copy: UnsafeMutablePointer<[UInt8]>?) throws(PushServiceError) {
        let start = index
        switch peek ?? 0 {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth <= Self.maxDepth else { throw syntax("nesting deeper than \(Self.maxDepth) levels") }
            let close = peek == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            copy?.pointee.append(bytes[index])
            if close == UInt8(ascii: "}") {
                var first = true
                try members { (reader: inout PushAPIJSONReader, key: String) throws(PushServiceError) in
                    if let copy {
                        if !first { copy.pointee.append(UInt8(ascii: ",")) }
                        copy.pointee.append(contentsOf: JSONText.quoted(key).utf8)
                        copy.pointee.append(UInt8(ascii: ":"))
                    }
                    first = false
                    try reader.skipValue(depth: depth + 1, copy: copy)
                }
            } else {
                var first = true
                try elements(depth: depth) { (reader: inout PushAPIJSONReader) throws(PushServiceError) in
                    if let copy, !first { copy.pointee.append(UInt8(ascii: ",")) }
                    first = false
                    try reader.skipValue(depth: depth + 1, copy: copy)
                }
            }
            copy?.pointee.append(close)
            return
        case UInt8(ascii: "\""):
            _ = try string()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            _ = try number()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: throw syntax("\(describe(peek)) where a value belongs")
        }
        copy?.pointee.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
    }

    mutating func literal(_ word: StaticString) throws(PushServiceError) {
        let n = word.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: n)
        guard bytes.count - index >= n, bytes[index..<index + n].elementsEqual(expected) else {
            throw syntax("\(describe(peek)) where a value belongs")
        }
        index += n
    }

    /// A number (RFC 8259's grammar); true when it is written as an integer (no fraction, no exponent).
    mutating func number() throws(PushServiceError) -> Bool {
        func digits() -> Int {
            let start = index
            while let b = peek, b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") { index += 1 }
            return index - start
        }
        if peek == UInt8(ascii: "-") { index += 1 }
        if peek == UInt8(ascii: "0") {
            index += 1
            if let b = peek, b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") {
                throw syntax("a number with a leading zero")
            }
        } else if digits() == 0 {
            throw syntax("\(describe(peek)) where a digit belongs")
        }
        var integral = true
        if peek == UInt8(ascii: ".") {
            index += 1
            integral = false
            guard digits() > 0 else { throw syntax("\(describe(peek)) where a digit belongs") }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            integral = false
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw syntax("\(describe(peek)) where a digit belongs") }
        }
        return integral
    }

    /// A number that must be an integer: its value, or nil when it has a fraction, does not fit 64 bits, or is not a
    /// whole number once its exponent is applied.
    mutating func integer() throws(PushServiceError) -> Int64? {
        let start = index
        let integral = try number()
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if integral { return Int64(text) }
        guard let value = Double(text), value.isFinite else { return nil }
        return Int64(exactly: value)
    }

    /// A string (the cursor on its opening quote), its escapes decoded; control characters and invalid UTF-8 refused
    /// (RouseText's scanner, the one JSONText reads with).
    mutating func string() throws(PushServiceError) -> String {
        do {
            return try JSONText.scanString(bytes, at: &index)
        } catch {
            index = error.offset
            throw syntax(error.reason)
        }
    }
}
