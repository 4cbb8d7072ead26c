/// A bounded parser for the flat JSON objects of a JWT header and claims set.
///
/// Reads one top-level object; keeps string, integer and boolean members; skips nested values up to a
/// small depth. It never traps and its work is linear in the input, which callers bound.
package struct FlatJSONObject: Sendable {
    /// A member value that a JWT needs.
    package enum Value: Sendable, Hashable {
        case string(String)
        case integer(Int64)
        case other
    }

    /// The members, last one wins (duplicates are not an error in RFC 8259).
    package var members: [String: Value] = [:]

    /// The member as a string, if it is one.
    package func string(_ key: String) -> String? {
        if case .string(let value) = members[key] { return value }
        return nil
    }

    /// The member as an integer, if it is one.
    package func integer(_ key: String) -> Int64? {
        if case .integer(let value) = members[key] { return value }
        return nil
    }

    /// Parses `bytes` as one JSON object; `nil` when it is not exactly one valid object.
    package static func parse(_ bytes: [UInt8]) -> FlatJSONObject? {
        var parser = Parser(bytes: bytes)
        guard let object = parser.parseTopObject() else { return nil }
        parser.skipWhitespace()
        return parser.index == bytes.count ? object : nil
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        static let maxDepth = 8

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func parseTopObject() -> FlatJSONObject? {
            guard consume(UInt8(ascii: "{")) else { return nil }
            var object = FlatJSONObject()
            if consume(UInt8(ascii: "}")) { return object }
            while true {
                skipWhitespace()
                guard let key = parseString(), consume(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                guard let value = parseValue(depth: 1) else { return nil }
                object.members[key] = value
                if consume(UInt8(ascii: ",")) { continue }
                if consume(UInt8(ascii: "}")) { return object }
                return nil
            }
        }

        mutating func parseValue(depth: Int) -> Value? {
            guard index < bytes.count, depth <= Self.maxDepth else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""): return parseString().map { .string($0) }
            case UInt8(ascii: "{"): return skipContainer(open: UInt8(ascii: "{"), depth: depth) ? .other : nil
            case UInt8(ascii: "["): return skipContainer(open: UInt8(ascii: "["), depth: depth) ? .other : nil
            case UInt8(ascii: "t"): return literal("true") ? .other : nil
            case UInt8(ascii: "f"): return literal("false") ? .other : nil
            case UInt8(ascii: "n"): return literal("null") ? .other : nil
            default: return parseNumber()
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            let matches = word.withUTF8Buffer { buffer in
                for offset in 0..<count where bytes[index + offset] != buffer[offset] { return false }
                return true
            }
            if matches { index += count }
            return matches
        }

        mutating func parseNumber() -> Value? {
            let start = index
            var negative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            var value: Int64 = 0
            var digits = 0
            var overflow = false
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                let digit = Int64(bytes[index] - UInt8(ascii: "0"))
                let (times, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times.addingReportingOverflow(digit)
                overflow = overflow || o1 || o2
                value = sum
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            if digits > 1, bytes[start + (negative ? 1 : 0)] == UInt8(ascii: "0") { return nil }
            var isInteger = !overflow
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard skipDigits() else { return nil }
                isInteger = false
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard skipDigits() else { return nil }
                isInteger = false
            }
            return isInteger ? .integer(negative ? -value : value) : .other
        }

        mutating func skipDigits() -> Bool {
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
            return index > start
        }

        mutating func skipContainer(open: UInt8, depth: Int) -> Bool {
            let close = open == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            index += 1
            if consume(close) { return true }
            while true {
                skipWhitespace()
                if open == UInt8(ascii: "{") {
                    guard parseString() != nil, consume(UInt8(ascii: ":")) else { return false }
                    skipWhitespace()
                }
                guard parseValue(depth: depth + 1) != nil else { return false }
                if consume(UInt8(ascii: ",")) { continue }
                return consume(close)
            }
        }

        mutating func parseString() -> String? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            var output: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(validating: output, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                    case UInt8(ascii: "b"): output.append(0x08)
                    case UInt8(ascii: "f"): output.append(0x0C)
                    case UInt8(ascii: "n"): output.append(0x0A)
                    case UInt8(ascii: "r"): output.append(0x0D)
                    case UInt8(ascii: "t"): output.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let scalar = parseUnicodeEscape() else { return nil }
                        output.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: return nil
                    }
                case 0x00..<0x20:
                    return nil
                default:
                    output.append(byte)
                }
            }
            return nil
        }

        mutating func parseHex4() -> UInt32? {
            guard bytes.count - index >= 4 else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: return nil
                }
                value = value << 4 | digit
            }
            return value
        }

        mutating func parseUnicodeEscape() -> Unicode.Scalar? {
            guard let high = parseHex4() else { return nil }
            if high >= 0xD800, high < 0xDC00 {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { return nil }
                index += 2
                guard let low = parseHex4(), low >= 0xDC00, low < 0xE000 else { return nil }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            }
            return Unicode.Scalar(high)
        }
    }
}
