import RouseAPNs

/// The JSON grammar under ``PushAPIJSONReader`` (RFC 8259): whitespace, objects, arrays, strings with their escapes
/// and UTF-8, numbers and literals, each error with what is wrong and the byte offset where.
extension PushAPIJSONReader {
    /// The byte under the cursor, or nil at the end.
    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// A syntax error at the cursor.
    func syntax(_ what: String) -> PushServiceError {
        .request("body is not valid JSON: \(what) at byte \(index)")
    }

    func describe(_ byte: UInt8?) -> String {
        guard let byte else { return "unexpected end" }
        return "unexpected " + Self.name(byte)
    }

    /// `'x'` for a visible ASCII byte, `byte 0xNN` for others.
    static func name(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

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

    /// A string (the cursor on its opening quote), its escapes decoded; control characters and invalid UTF-8 refused.
    mutating func string() throws(PushServiceError) -> String {
        index += 1
        let start = index
        // The common case: no escape, the bytes are the string.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
                guard let s = String(validating: raw, as: UTF8.self) else {
                    throw syntax("invalid UTF-8 in the string that ends")
                }
                index += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw syntax("control character 0x\(String(b, radix: 16, uppercase: true)) in a string") }
            index += 1
        }
        var decoded = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                guard let s = String(validating: decoded, as: UTF8.self) else {
                    throw syntax("invalid UTF-8 in the string that ends")
                }
                index += 1
                return s
            case UInt8(ascii: "\\"):
                index += 1
                try escape(into: &decoded)
            case 0..<0x20:
                throw syntax("control character 0x\(String(b, radix: 16, uppercase: true)) in a string")
            default:
                decoded.append(b)
                index += 1
            }
        }
        throw syntax("unterminated string")
    }

    /// One escape after its backslash.
    mutating func escape(into decoded: inout [UInt8]) throws(PushServiceError) {
        guard let b = peek else { throw syntax("unterminated string") }
        index += 1
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(b)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw syntax("a high surrogate escape without its low surrogate") }
                index += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else {
                    throw syntax("a high surrogate escape without its low surrogate")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw syntax("a low surrogate escape without its high surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw syntax("an escape of no Unicode scalar") }
            decoded.append(contentsOf: String(Character(unicode)).utf8)
        default:
            index -= 1
            throw syntax("invalid escape: a backslash before \(Self.name(b))")
        }
    }

    mutating func hex4() throws(PushServiceError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let b = peek else { throw syntax("unterminated \\u escape") }
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw syntax("\(describe(b)) in a \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
