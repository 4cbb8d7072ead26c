/// One D-Bus value with its type: what a method's arguments, a reply's values and a signal's body are made of.
///
/// Containers carry the signature of their elements, so that an empty array or dictionary still has a type
/// (`a{sv}` with no entry is `.dictionary(key: "s", value: "v", [])`). Unix descriptors (`h`) are not modelled:
/// none of the interfaces Rouse speaks passes one, and a message carrying one is refused as unsupported.
package indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A value of any type, its type carried with it (`v`).
    case variant(DBusValue)
    /// An array of values of one type, `element` its signature (`a…`).
    case array(element: String, [DBusValue])
    /// A dictionary (`a{…}`): an array of key-value entries; `key` and `value` are their signatures. Order kept.
    case dictionary(key: String, value: String, [DictionaryEntry])
    /// A struct (`(…)`).
    case structure([DBusValue])

    /// One entry of a ``DBusValue/dictionary(key:value:_:)``.
    package struct DictionaryEntry: Sendable, Hashable {
        /// The entry's key (a basic type).
        package var key: DBusValue
        /// The entry's value.
        package var value: DBusValue
        /// An entry.
        package init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value's D-Bus signature (`s`, `a{sv}`, `(so)` …).
    package var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .variant: "v"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// An `a{sv}` dictionary from string keys, each value wrapped in a variant: what notification hints, UnifiedPush
    /// messages and most "options" arguments are.
    package static func vardict(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: "s", value: "v", entries.map { DictionaryEntry(.string($0.0), .variant($0.1)) })
    }

    // MARK: Reading

    /// The string of a `s`, `o` or `g` value; nil for any other type.
    package var string: String? {
        switch self {
        case .string(let text), .objectPath(let text), .signature(let text): text
        default: nil
        }
    }

    /// A boolean's value; nil for any other type.
    package var bool: Bool? {
        if case .boolean(let value) = self { return value }
        return nil
    }

    /// An unsigned 32-bit value's; nil for any other type.
    package var uint32: UInt32? {
        if case .uint32(let value) = self { return value }
        return nil
    }

    /// A double's value; nil for any other type.
    package var double: Double? {
        if case .double(let value) = self { return value }
        return nil
    }

    /// The value inside a variant; the value itself when it is not one.
    package var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// The elements of an array; nil for any other type.
    package var elements: [DBusValue]? {
        if case .array(_, let values) = self { return values }
        return nil
    }

    /// The fields of a struct; nil for any other type.
    package var fields: [DBusValue]? {
        if case .structure(let values) = self { return values }
        return nil
    }

    /// An `a{s…}` dictionary as a Swift one (variants unwrapped); nil for any other type. A repeated key keeps its
    /// last value.
    package var stringKeyed: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value.unwrapped
        }
        return result
    }
}
