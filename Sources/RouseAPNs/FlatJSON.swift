import FoundationEssentials

/// The members of one flat JSON object that a JWT header or claims set, or an APNs error body, carries: strings and
/// integers and other numbers by name; any other value (a boolean, null, a nested array or object) is `.other`.
///
/// Parsed by Foundation's `JSONDecoder`, which rejects anything that is not exactly one valid JSON value; callers
/// bound the input's length (`ProviderToken.maxLength`, `APNsErrorBody.maxLength`).
package struct FlatJSONObject: Sendable {
    /// A member value that a JWT needs.
    package enum Value: Sendable, Hashable, Decodable {
        case string(String)
        case integer(Int64)
        /// A JSON number that is not an integer `Int64` holds (a fraction, an exponent form), as a `Double`.
        case number(Double)
        case other

        package init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Int64.self) {
                self = .integer(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode(Double.self), value.isFinite {
                self = .number(value)
            } else {
                self = .other
            }
        }
    }

    /// The members.
    package var members: [String: Value]

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

    /// The member as a number of any form (an integer or a fraction), if it is one.
    package func number(_ key: String) -> Double? {
        switch members[key] {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    /// Parses `bytes` as one JSON object; `nil` when it is not exactly one valid object.
    package static func parse(_ bytes: [UInt8]) -> FlatJSONObject? {
        guard let members = try? JSONDecoder().decode([String: Value].self, from: Data(bytes)) else { return nil }
        return FlatJSONObject(members: members)
    }
}
