/// JSON text read and written on the standard library alone (RFC 8259), so that the programs that must stay small (the
/// example handler, the agent client library) need no Foundation at all. Hand-written because no JSON library without
/// Foundation is among the packages this project may use; it is kept to what RFC 8259 says, is tested against
/// Foundation's `JSONDecoder`/`JSONEncoder` (Tests/RouseTextTests), and bounds what hostile text can cost: one pass,
/// nesting at most ``JSONText/maxDepth``.
package enum JSONText {
    /// The deepest nesting of arrays and objects read (what Foundation's parser allows too).
    package static let maxDepth = 512

    /// Why text is not JSON: what was found, at which byte.
    package struct SyntaxError: Error, CustomStringConvertible, Equatable {
        /// What is wrong.
        package let reason: String
        /// The byte offset where it was found.
        package let offset: Int

        package var description: String { "\(reason) at byte \(offset)" }

        package init(reason: String, offset: Int) {
            self.reason = reason
            self.offset = offset
        }
    }

    /// The value `bytes` hold: one JSON value (a scalar at the top too) with only whitespace around it.
    package static func parse(_ bytes: some Collection<UInt8>) throws(SyntaxError) -> JSONValue {
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { buffer throws(SyntaxError) -> JSONValue in
            var reader = Reader(bytes: buffer)
            // A UTF-8 byte order mark may be ignored (RFC 8259 §8.1), as Foundation's parser does.
            if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { reader.at = 3 }
            reader.skipWhitespace()
            let value = try reader.value()
            reader.skipWhitespace()
            guard reader.at == buffer.count else { throw reader.error("unexpected text after the value") }
            return value
        }
    }

    /// Compact JSON text of `value`: members in the byte order of their names (as Foundation's `.sortedKeys`), `/`
    /// escaped as `\/` when `escapingSlashes` (Foundation's default), numbers as Foundation writes them.
    package static func bytes(_ value: JSONValue, escapingSlashes: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(value, into: &out, escapingSlashes: escapingSlashes)
        return out
    }

    /// Indented JSON text of `value` as Foundation's `.prettyPrinted` writes it (two spaces, `"name" : value`, an
    /// empty array or object with an empty line inside), members sorted, `/` escaped when `escapingSlashes`.
    package static func prettyBytes(_ value: JSONValue, escapingSlashes: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        writePretty(value, indent: 0, into: &out, escapingSlashes: escapingSlashes)
        return out
    }

    private static func newline(_ indent: Int, into out: inout [UInt8]) {
        out.append(0x0A)
        out += repeatElement(UInt8(ascii: " "), count: indent * 2)
    }

    private static func writePretty(_ value: JSONValue, indent: Int, into out: inout [UInt8], escapingSlashes: Bool) {
        switch value {
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            if elements.isEmpty { out.append(0x0A) }
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1, into: &out)
                writePretty(element, indent: indent + 1, into: &out, escapingSlashes: escapingSlashes)
            }
            newline(indent, into: &out)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            if members.isEmpty { out.append(0x0A) }
            for (index, key) in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1, into: &out)
                writeString(key, into: &out, escapingSlashes: escapingSlashes)
                out += " : ".utf8
                writePretty(members[key] ?? .null, indent: indent + 1, into: &out, escapingSlashes: escapingSlashes)
            }
            newline(indent, into: &out)
            out.append(UInt8(ascii: "}"))
        default:
            write(value, into: &out, escapingSlashes: escapingSlashes)
        }
    }

    private static func write(_ value: JSONValue, into out: inout [UInt8], escapingSlashes: Bool) {
        switch value {
        case .null: out += "null".utf8
        case .bool(let value): out += (value ? "true" : "false").utf8
        case .integer(let value): out += String(value).utf8
        case .unsigned(let value): out += String(value).utf8
        case .double(let value): out += number(value).utf8
        case .string(let value): writeString(value, into: &out, escapingSlashes: escapingSlashes)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out, escapingSlashes: escapingSlashes)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                writeString(key, into: &out, escapingSlashes: escapingSlashes)
                out.append(UInt8(ascii: ":"))
                write(members[key] ?? .null, into: &out, escapingSlashes: escapingSlashes)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A finite double as Foundation's encoder writes it: Swift's shortest round-trip text without a trailing `.0`
    /// (`5`, `0.1`, `1e+20`, `1e-07`); JSON has no NaN or infinity, which are written `null`.
    package static func number(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        let text = value.description
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func writeString(_ text: String, into out: inout [UInt8], escapingSlashes: Bool) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += #"\""#.utf8
            case UInt8(ascii: "\\"): out += #"\\"#.utf8
            case UInt8(ascii: "/") where escapingSlashes: out += #"\/"#.utf8
            case 0x0A: out += #"\n"#.utf8
            case 0x0D: out += #"\r"#.utf8
            case 0x09: out += #"\t"#.utf8
            case 0x08: out += #"\b"#.utf8
            case 0x0C: out += #"\f"#.utf8
            case 0..<0x20:
                out += #"\u00"#.utf8
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// One pass over the bytes.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func error(_ reason: String) -> SyntaxError { SyntaxError(reason: reason, offset: at) }

        mutating func skipWhitespace() {
            while at < bytes.count {
                switch bytes[at] {
                case 0x20, 0x0A, 0x0D, 0x09: at += 1
                default: return
                }
            }
        }

        /// One value and everything nested in it, without recursion: the open arrays and objects are kept on a stack
        /// of their own, so hostile nesting costs heap (bounded by ``JSONText/maxDepth``), never the thread's stack
        /// (an event loop's is 1 MiB; a debug build's recursive parser needed more than that for 512 levels).
        mutating func value() throws(SyntaxError) -> JSONValue {
            // The open containers, innermost last (`inObject`: whether it is an object), each kind on a stack of its
            // own so that it grows in place: arrays' elements so far; objects' members so far and the name being read.
            var inObject: [Bool] = []
            var arrays: [[JSONValue]] = []
            var objects: [[String: JSONValue]] = []
            var keys: [String] = []
            while true {
                // The start of a value.
                guard at < bytes.count else { throw error("unexpected end of text") }
                var done: JSONValue
                switch bytes[at] {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    guard inObject.count < JSONText.maxDepth else {
                        throw error("nested deeper than \(JSONText.maxDepth)")
                    }
                    let isObject = bytes[at] == UInt8(ascii: "{")
                    at += 1
                    skipWhitespace()
                    if isObject {
                        if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
                            at += 1
                            done = .object([:])
                        } else {
                            keys.append(try memberName())
                            objects.append([:])
                            inObject.append(true)
                            continue
                        }
                    } else {
                        if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
                            at += 1
                            done = .array([])
                        } else {
                            arrays.append([])
                            inObject.append(false)
                            continue
                        }
                    }
                case UInt8(ascii: "\""): done = .string(try string())
                case UInt8(ascii: "t"): done = try literal("true", .bool(true))
                case UInt8(ascii: "f"): done = try literal("false", .bool(false))
                case UInt8(ascii: "n"): done = try literal("null", .null)
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): done = try number()
                default: throw error(JSONText.describe(bytes[at]))
                }
                // A value is complete: it goes into the innermost open container, which may complete in turn.
                var next = false
                while let isObject = inObject.last, !next {
                    skipWhitespace()
                    if isObject {
                        let key = keys.removeLast()
                        // A repeated name: the first one counts, as in Foundation's parser.
                        if objects[objects.count - 1][key] == nil { objects[objects.count - 1][key] = done }
                        guard at < bytes.count else { throw error("unexpected end of text in an object") }
                        if bytes[at] == UInt8(ascii: ",") {
                            at += 1
                            skipWhitespace()
                            keys.append(try memberName())
                            next = true
                            continue
                        }
                        guard bytes[at] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
                        at += 1
                        done = .object(objects.removeLast())
                    } else {
                        arrays[arrays.count - 1].append(done)
                        guard at < bytes.count else { throw error("unexpected end of text in an array") }
                        if bytes[at] == UInt8(ascii: ",") {
                            at += 1
                            skipWhitespace()
                            next = true
                            continue
                        }
                        guard bytes[at] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
                        at += 1
                        done = .array(arrays.removeLast())
                    }
                    inObject.removeLast()
                }
                if inObject.isEmpty { return done }
            }
        }

        mutating func literal(_ word: StaticString, _ value: JSONValue) throws(SyntaxError) -> JSONValue {
            let count = word.utf8CodeUnitCount
            guard at + count <= bytes.count else { throw error("unexpected end of text") }
            for index in 0..<count where bytes[at + index] != word.utf8Start[index] {
                throw error("invalid literal (expected \(word))")
            }
            at += count
            return value
        }

        /// A member's name and its `:`, the value after it next.
        mutating func memberName() throws(SyntaxError) -> String {
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try string()
            skipWhitespace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw error("expected ':'") }
            at += 1
            skipWhitespace()
            return key
        }

        mutating func string() throws(SyntaxError) -> String { try JSONText.scanString(bytes, at: &at) }

        mutating func number() throws(SyntaxError) -> JSONValue {
            let start = at
            if bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard at < bytes.count, isDigit(bytes[at]) else { throw error("a number without digits") }
            if bytes[at] == UInt8(ascii: "0") {
                at += 1
                if at < bytes.count, isDigit(bytes[at]) { throw error("a number with a leading zero") }
            } else {
                while at < bytes.count, isDigit(bytes[at]) { at += 1 }
            }
            var integral = true
            if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
                integral = false
                at += 1
                guard at < bytes.count, isDigit(bytes[at]) else { throw error("a fraction without digits") }
                while at < bytes.count, isDigit(bytes[at]) { at += 1 }
            }
            if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
                integral = false
                at += 1
                if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
                guard at < bytes.count, isDigit(bytes[at]) else { throw error("an exponent without digits") }
                while at < bytes.count, isDigit(bytes[at]) { at += 1 }
            }
            let text = String(decoding: bytes[start..<at], as: UTF8.self)
            if integral, let value = Int64(text) { return .integer(value) }
            if integral, let value = UInt64(text) { return .unsigned(value) }
            guard let value = Double(text), value.isFinite else {
                at = start
                throw error("a number out of range")
            }
            // A whole number written with a fraction or an exponent (`1E5`, `0.0`) is an integer, as Foundation's
            // decoder reads one (it tries Int64 first); not at ±2⁶³ and beyond, where the double may be the rounding
            // of a number that does not fit (`-9223372036854775809` is the double −2⁶³).
            if !integral, value.magnitude < 0x1p63, let whole = Int64(exactly: value) { return .integer(whole) }
            return .double(value)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    }
}
