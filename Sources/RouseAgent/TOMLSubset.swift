import RouseText

/// A strict parser for the small TOML subset handler files use: `key = value` lines, `[table]` headers,
/// `#` comments; values are basic strings (`"…"` with `\"`, `\\`, `\n`, `\t` escapes), integers, floats,
/// booleans and one-line arrays of those. Anything else is an error naming the line and column.
/// (TOMLKit would pull a C++ library into the build; this subset is all the handler files need.)
enum TOMLSubset {
    /// A parsed value.
    enum Value: Equatable, Sendable {
        case string(String)
        case integer(Int)
        case float(Double)
        case bool(Bool)
        case array([Value])
    }

    /// Parses `text`; keys of tables are returned as `table.key`.
    static func parse(_ text: String, file: String) throws(AgentError) -> [String: Value] {
        var result: [String: Value] = [:]
        var table = ""
        // Lines are cut on bytes: on Characters, "\r\n" is one and a CRLF file was a single line, its later keys
        // silently ignored (the scanner stops at "\r").
        let lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for (index, rawLine) in lines.enumerated() {
            let lineNumber = index + 1
            func fail(_ message: String) -> AgentError { .configuration("\(file):\(lineNumber): \(message)") }
            var scanner = Scanner(Array(rawLine))
            scanner.skipSpaces()
            if scanner.atEndOrComment { continue }
            if scanner.peek == UInt8(ascii: "[") {
                scanner.index += 1
                let name = scanner.bareKey()
                guard !name.isEmpty, scanner.peek == UInt8(ascii: "]") else { throw fail("bad table header") }
                scanner.index += 1
                scanner.skipSpaces()
                guard scanner.atEndOrComment else { throw fail("text after table header") }
                table = name + "."
                continue
            }
            let key = scanner.bareKey()
            guard !key.isEmpty else { throw fail("expected a key at column \(scanner.index + 1)") }
            scanner.skipSpaces()
            guard scanner.peek == UInt8(ascii: "=") else { throw fail("expected '=' after key \(key)") }
            scanner.index += 1
            scanner.skipSpaces()
            let value: Value
            do {
                value = try scanner.value()
            } catch {
                throw fail("\(error.message) at column \(scanner.index + 1)")
            }
            scanner.skipSpaces()
            guard scanner.atEndOrComment else { throw fail("text after the value of \(key)") }
            guard result[table + key] == nil else { throw fail("duplicate key \(table + key)") }
            result[table + key] = value
        }
        return result
    }

    struct ParseFailure: Error {
        let message: String
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }
        var atEndOrComment: Bool { peek == nil || peek == UInt8(ascii: "#") || peek == UInt8(ascii: "\r") }

        mutating func skipSpaces() {
            while let byte = peek, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { index += 1 }
        }

        mutating func bareKey() -> String {
            let start = index
            while let byte = peek,
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_")
            {
                index += 1
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// Deepest nesting of arrays accepted: deeper input is refused, not recursed into until the stack ends.
        static let maxDepth = 8

        mutating func value(depth: Int = 0) throws(ParseFailure) -> Value {
            guard depth <= Self.maxDepth else {
                throw ParseFailure(message: "arrays nested more than \(Self.maxDepth) deep")
            }
            guard let byte = peek else { throw ParseFailure(message: "missing value") }
            if byte == UInt8(ascii: "\"") { return .string(try string()) }
            if byte == UInt8(ascii: "[") {
                index += 1
                var items: [Value] = []
                while true {
                    skipSpaces()
                    if peek == UInt8(ascii: "]") {
                        index += 1
                        return .array(items)
                    }
                    items.append(try value(depth: depth + 1))
                    skipSpaces()
                    if peek == UInt8(ascii: ",") {
                        index += 1
                    } else if peek != UInt8(ascii: "]") {
                        throw ParseFailure(message: "expected ',' or ']' in array")
                    }
                }
            }
            let start = index
            while let next = peek, next != UInt8(ascii: " "), next != UInt8(ascii: "\t"), next != UInt8(ascii: ","),
                next != UInt8(ascii: "]"), next != UInt8(ascii: "#"), next != UInt8(ascii: "\r")
            {
                index += 1
            }
            let word = String(decoding: bytes[start..<index], as: UTF8.self)
            if word == "true" { return .bool(true) }
            if word == "false" { return .bool(false) }
            let digits = word.replacingAll("_", with: "")
            if let integer = Int(digits) { return .integer(integer) }
            if let float = Double(digits), float.isFinite { return .float(float) }
            throw ParseFailure(message: "unsupported value '\(word)'")
        }

        mutating func string() throws(ParseFailure) -> String {
            index += 1
            var result: [UInt8] = []
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return String(decoding: result, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = peek else { throw ParseFailure(message: "unterminated escape") }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""): result.append(escaped)
                    case UInt8(ascii: "\\"): result.append(escaped)
                    case UInt8(ascii: "n"): result.append(10)
                    case UInt8(ascii: "t"): result.append(9)
                    default: throw ParseFailure(message: "unsupported escape \\\(Character(UnicodeScalar(escaped)))")
                    }
                default: result.append(byte)
                }
            }
            throw ParseFailure(message: "unterminated string")
        }
    }
}
