import RouseText

/// A value bound to a statement parameter: text, or bytes (sent in binary, as `bytea`).
package enum PostgresValue {
    case text(String)
    case bytes([UInt8])
    case null

    package init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    package init(_ value: Int64?) { self = value.map { .text(String($0)) } ?? .null }
    package init(_ value: Int?) { self = value.map { .text(String($0)) } ?? .null }
    package init(_ value: Bool) { self = .text(value ? "t" : "f") }
    package init(_ value: [UInt8]?) { self = value.map { .bytes($0) } ?? .null }
    /// A `text[]` parameter in PostgreSQL's array literal form (`{"a","b"}`, each element quoted and escaped).
    package init(textArray values: [String]) {
        let elements = values.map { value in
            "\"" + value.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")
                + "\""
        }
        self = .text("{" + elements.joined(separator: ",") + "}")
    }
    /// A `bigint[]` literal.
    package init(array: [Int64]) { self = .text("{" + array.map(String.init).joined(separator: ",") + "}") }
}
