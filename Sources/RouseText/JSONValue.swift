/// Any JSON value, for the few places that read JSON whose shape is not a type of ours (a push payload's `aps`, a
/// JWT's header and claims, a Matrix notification passed on, a configuration file's unknown members) or build one
/// (`rouse reach --json`). Read and written by ``JSONText`` (RFC 8259, nesting bounded), instead of
/// `JSONSerialization`, which is only in Foundation's full module and answers with `NSNumber`s and `[String: Any]`.
package enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A whole number that fits in 64 bits, signed.
    case integer(Int64)
    /// A whole number above `Int64.max` that fits in 64 bits unsigned (a channel id: 1…2⁶⁴−1).
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package struct ParseError: Error, CustomStringConvertible {
        package let description: String
    }

    /// The value `bytes` hold (any JSON text, a scalar at the top too); throws when they are not JSON.
    package static func parse(_ bytes: some Sequence<UInt8>) throws(ParseError) -> JSONValue {
        do {
            return try JSONText.parse(Array(bytes))
        } catch {
            throw ParseError(description: "not JSON: \(error)")
        }
    }

    /// The value of JSON text; nil when it is not JSON.
    package init?(parsing text: some StringProtocol) {
        guard let value = try? Self.parse(text.utf8) else { return nil }
        self = value
    }

    /// Compact JSON text, members in key order, `/` not escaped.
    package var text: String { String(decoding: JSONText.bytes(self), as: UTF8.self) }

    /// A JSON number: an integer when `value` is whole and fits, a double otherwise; `null` when not finite (JSON
    /// has no NaN or infinity).
    package static func number(_ value: Double) -> JSONValue {
        guard value.isFinite else { return .null }
        if value == value.rounded(), abs(value) < 9.0e15 { return .integer(Int64(value)) }
        return .double(value)
    }

    /// The member `key` of an object; nil for other values or a missing member.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    package var string: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    package var bool: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    /// An integer, or a double with no fraction that fits.
    package var int64: Int64? {
        switch self {
        case .integer(let value): value
        case .unsigned: nil
        case .double(let value) where value == value.rounded() && abs(value) < 9.2e18: Int64(value)
        default: nil
        }
    }

    package var int: Int? { int64.flatMap { Int(exactly: $0) } }

    /// Any number, as a double.
    package var double: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .unsigned(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// A string as it is, any other value as JSON writes it (for a line meant for reading).
    package var plainText: String { string ?? text }

    package var array: [JSONValue]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    package var object: [String: JSONValue]? {
        guard case .object(let value) = self else { return nil }
        return value
    }
}

extension JSONValue: Codable {
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsigned(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .unsigned(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    package init(nilLiteral: ()) { self = .null }
}
