/// `Codable` types to and from JSON on the standard library alone (its `Encoder`/`Decoder` protocols over
/// ``JSONValue``, text by ``JSONText``): what FoundationEssentials' `JSONEncoder`/`JSONDecoder` do for this project's
/// wire types, without Foundation, for the programs that must stay small. Written by hand for the reason JSONText is;
/// its output is byte for byte `JSONEncoder`'s with `.sortedKeys` (slashes escaped or not), and what it reads is
/// what `JSONDecoder` reads (checked in Tests/RouseTextTests). No date, data or URL strategies: the types coded here
/// have none.
package enum JSONCoding {
    /// Compact JSON text of `value`, members sorted; `/` escaped as `\/` when `escapingSlashes` (as `JSONEncoder`
    /// does unless told `.withoutEscapingSlashes`). Throws `EncodingError` for a number JSON cannot hold.
    package static func encode(_ value: some Encodable, escapingSlashes: Bool = true) throws(EncodingError) -> [UInt8] {
        JSONText.bytes(try self.value(of: value), escapingSlashes: escapingSlashes)
    }

    /// Indented JSON text of `value` as `JSONEncoder`'s `[.prettyPrinted, .sortedKeys]` writes it.
    package static func encodePretty(_ value: some Encodable) throws(EncodingError) -> [UInt8] {
        JSONText.prettyBytes(try self.value(of: value))
    }

    /// The JSON value `value` encodes to.
    package static func value(of value: some Encodable) throws(EncodingError) -> JSONValue {
        let root = EncodedNode()
        do {
            try value.encode(to: ValueEncoder(node: root, codingPath: []))
        } catch let error as EncodingError {
            throw error
        } catch {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "encoding failed", underlyingError: error))
        }
        return root.value
    }

    /// A `T` read from JSON text. Throws `DecodingError`: `dataCorrupted` (its underlying error the
    /// ``JSONText/SyntaxError``) for text that is not JSON, the others as `JSONDecoder` does.
    package static func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        let value: JSONValue
        do {
            value = try JSONText.parse(bytes)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [], debugDescription: "The given data was not valid JSON: \(error)",
                    underlyingError: error))
        }
        return try decode(type, from: value)
    }

    /// A `T` read from a JSON value.
    package static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        if T.self == JSONValue.self, let value = value as? T { return value }
        return try T(from: ValueDecoder(value: value, codingPath: []))
    }
}

/// An array index as a coding key (for coding paths).
struct IndexKey: CodingKey {
    let intValue: Int?
    let stringValue: String
    init(_ index: Int) {
        intValue = index
        stringValue = "Index \(index)"
    }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.init(intValue) }
}

/// A named key (`super`, for superEncoder/superDecoder).
struct NamedKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

// MARK: Encoding

/// What an encoder writes into: shared by every container taken from one encoder (a frame's members and its
/// message's go into the same object).
final class EncodedNode {
    enum Kind {
        case unset, value, object, array
    }
    /// What the node is; only the matching storage below is used. (Separate stored properties, not an enum with
    /// payloads: a member or an element is added in place, where taking an enum's payload out to add to it copies
    /// the whole dictionary or array at every addition.)
    var kind = Kind.unset
    var scalar = JSONValue.null
    var members: [String: EncodedNode] = [:]
    var elements: [EncodedNode] = []

    /// A value encoding nothing is an empty object, as with `JSONEncoder`.
    var value: JSONValue {
        switch kind {
        case .unset: .object([:])
        case .value: scalar
        case .object: .object(members.mapValues(\.value))
        case .array: .array(elements.map(\.value))
        }
    }

    /// Sets the node to a value.
    func set(_ value: JSONValue) {
        kind = .value
        scalar = value
        members = [:]
        elements = []
    }

    /// The member `key`, made when missing (a second container for the same key writes into the first's).
    func member(_ key: String) -> EncodedNode {
        makeObject()
        if let node = members[key] { return node }
        let node = EncodedNode()
        members[key] = node
        return node
    }

    func set(_ key: String, _ value: JSONValue) { member(key).set(value) }

    func makeObject() {
        guard kind != .object else { return }
        kind = .object
        members = [:]
        elements = []
    }

    func makeArray() {
        guard kind != .array else { return }
        kind = .array
        members = [:]
        elements = []
    }

    func append() -> EncodedNode {
        makeArray()
        let node = EncodedNode()
        elements.append(node)
        return node
    }

    var count: Int { kind == .array ? elements.count : 0 }
}

enum Scalar {
    static func double(_ value: Double, _ path: [any CodingKey]) throws(EncodingError) -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: path, debugDescription: "Unable to encode Double.\(value) directly in JSON."))
        }
        return .double(value)
    }

    static func float(_ value: Float, _ path: [any CodingKey]) throws(EncodingError) -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: path, debugDescription: "Unable to encode Float.\(value) directly in JSON."))
        }
        // Float's own shortest text (0.1, not 0.10000000149011612), as JSONEncoder writes it.
        return .double(Double(value.description) ?? Double(value))
    }

    static func integer(_ value: some BinaryInteger) -> JSONValue {
        if let exact = Int64(exactly: value) { return .integer(exact) }
        if let exact = UInt64(exactly: value) { return .unsigned(exact) }
        return .double(Double(value))
    }

    /// Encodes `value` into `node`: a JSON value as it is, anything else through its own `encode(to:)`.
    static func encode(_ value: some Encodable, into node: EncodedNode, _ path: [any CodingKey]) throws {
        if let json = value as? JSONValue {
            node.set(json)
            return
        }
        try value.encode(to: ValueEncoder(node: node, codingPath: path))
    }
}

struct ValueEncoder: Encoder {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeObject()
        return KeyedEncodingContainer(KeyedEncoder<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.makeArray()
        return UnkeyedEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleEncoder(node: node, codingPath: codingPath)
    }
}

struct KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.set(key.stringValue, .null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { node.set(key.stringValue, .bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { node.set(key.stringValue, .string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        node.set(key.stringValue, try Scalar.double(value, codingPath + [key]))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        node.set(key.stringValue, try Scalar.float(value, codingPath + [key]))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { node.set(key.stringValue, Scalar.integer(value)) }
    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        try Scalar.encode(value, into: node.member(key.stringValue), codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = node.member(key.stringValue)
        child.makeObject()
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.member(key.stringValue)
        child.makeArray()
        return UnkeyedEncoder(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        ValueEncoder(node: node.member("super"), codingPath: codingPath + [NamedKey("super")])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        ValueEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
    }
}

struct UnkeyedEncoder: UnkeyedEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var count: Int { node.count }

    private var next: [any CodingKey] { codingPath + [IndexKey(count)] }

    mutating func encodeNil() throws { node.append().set(.null) }
    mutating func encode(_ value: Bool) throws { node.append().set(.bool(value)) }
    mutating func encode(_ value: String) throws { node.append().set(.string(value)) }
    mutating func encode(_ value: Double) throws {
        let json = try Scalar.double(value, next)
        node.append().set(json)
    }
    mutating func encode(_ value: Float) throws {
        let json = try Scalar.float(value, next)
        node.append().set(json)
    }
    mutating func encode(_ value: Int) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: Int8) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: Int16) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: Int32) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: Int64) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt8) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt16) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt32) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt64) throws { node.append().set(Scalar.integer(value)) }
    mutating func encode(_ value: some Encodable) throws {
        let path = next
        try Scalar.encode(value, into: node.append(), path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let path = next
        let child = node.append()
        child.makeObject()
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = next
        let child = node.append()
        child.makeArray()
        return UnkeyedEncoder(node: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = next
        return ValueEncoder(node: node.append(), codingPath: path)
    }
}

struct SingleEncoder: SingleValueEncodingContainer {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.set(.null) }
    mutating func encode(_ value: Bool) throws { node.set(.bool(value)) }
    mutating func encode(_ value: String) throws { node.set(.string(value)) }
    mutating func encode(_ value: Double) throws { node.set(try Scalar.double(value, codingPath)) }
    mutating func encode(_ value: Float) throws { node.set(try Scalar.float(value, codingPath)) }
    mutating func encode(_ value: Int) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: Int8) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: Int16) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: Int32) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: Int64) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt8) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt16) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt32) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: UInt64) throws { node.set(Scalar.integer(value)) }
    mutating func encode(_ value: some Encodable) throws { try Scalar.encode(value, into: node, codingPath) }
}

// MARK: Decoding

/// How `JSONDecoder` names a JSON value's kind in its type-mismatch messages.
func kindName(_ value: JSONValue) -> String {
    switch value {
    case .null: "null"
    case .bool: "bool"
    case .integer, .unsigned, .double: "number"
    case .string: "a string"
    case .array: "an array"
    case .object: "a dictionary"
    }
}

enum Unbox {
    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        if value == .null {
            return .valueNotFound(
                type, .init(codingPath: path, debugDescription: "Expected \(type) value but found null instead."))
        }
        return .typeMismatch(
            type,
            .init(
                codingPath: path, debugDescription: "Expected to decode \(type) but found \(kindName(value)) instead."))
    }

    static func bool(_ value: JSONValue, _ path: [any CodingKey]) throws -> Bool {
        guard case .bool(let bool) = value else { throw mismatch(Bool.self, value, path) }
        return bool
    }

    static func string(_ value: JSONValue, _ path: [any CodingKey]) throws -> String {
        guard case .string(let string) = value else { throw mismatch(String.self, value, path) }
        return string
    }

    static func double(_ value: JSONValue, _ path: [any CodingKey]) throws -> Double {
        switch value {
        case .integer(let integer): return Double(integer)
        case .unsigned(let integer): return Double(integer)
        case .double(let double): return double
        default: throw mismatch(Double.self, value, path)
        }
    }

    static func float(_ value: JSONValue, _ path: [any CodingKey]) throws -> Float {
        let double = try self.double(value, path)
        let float = Float(double)
        guard float.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "Number \(double) does not fit in Float."))
        }
        return float
    }

    /// An integer, or a number with no fraction that fits (`5.0` reads as 5, as with `JSONDecoder`). A number that
    /// does not fit is a type mismatch at its path (Foundation's decoder says only "not valid JSON", without a path).
    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ value: JSONValue, _ path: [any CodingKey]) throws -> T {
        let fitted: T?
        switch value {
        case .integer(let integer): fitted = T(exactly: integer)
        case .unsigned(let integer): fitted = T(exactly: integer)
        // Not at 2⁶³ and beyond: such a double may be the rounding of an integer that fits in no 64 bits.
        case .double(let double): fitted = double.magnitude < 0x1p63 ? T(exactly: double) : nil
        default: throw mismatch(T.self, value, path)
        }
        guard let fitted else {
            throw DecodingError.typeMismatch(
                T.self,
                .init(
                    codingPath: path,
                    debugDescription: "Expected to decode \(T.self) but found number \(JSONText.bytes(value).text)."))
        }
        return fitted
    }

    static func decode<T: Decodable>(_ type: T.Type, _ value: JSONValue, _ path: [any CodingKey]) throws -> T {
        if T.self == JSONValue.self, let json = value as? T { return json }
        return try T(from: ValueDecoder(value: value, codingPath: path))
    }
}

extension [UInt8] {
    fileprivate var text: String { String(decoding: self, as: UTF8.self) }
}

struct ValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw Unbox.mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedDecoder<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw Unbox.mismatch([Any].self, value, codingPath) }
        return UnkeyedDecoder(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleDecoder(value: value, codingPath: codingPath)
    }
}

struct KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: codingPath,
                    debugDescription: "No value associated with key \(key.stringValue) (\"\(key.stringValue)\")."))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Unbox.bool(member(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try Unbox.string(member(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try Unbox.double(member(key), codingPath + [key])
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try Unbox.float(member(key), codingPath + [key])
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try Unbox.integer(type, member(key), codingPath + [key])
    }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try Unbox.decode(type, member(key), codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: member(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: members["super"] ?? .null, codingPath: codingPath + [NamedKey("super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

struct UnkeyedDecoder: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next<T>(_ type: T.Type, _ body: (JSONValue, [any CodingKey]) throws -> T) throws -> T {
        let path = codingPath + [IndexKey(currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: path, debugDescription: "Unkeyed container is at end."))
        }
        let value = try body(elements[currentIndex], path)
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any?.self,
                .init(
                    codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "Unkeyed container is at end.")
            )
        }
        guard elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type, Unbox.bool) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type, Unbox.string) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type, Unbox.double) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type, Unbox.float) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) { try Unbox.integer(type, $0, $1) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type) { try Unbox.decode(type, $0, $1) } }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) {
            try ValueDecoder(value: $0, codingPath: $1).container(keyedBy: type)
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { try ValueDecoder(value: $0, codingPath: $1).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { ValueDecoder(value: $0, codingPath: $1) }
    }
}

struct SingleDecoder: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Unbox.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try Unbox.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Unbox.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try Unbox.float(value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Unbox.integer(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Unbox.integer(type, value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Unbox.decode(type, value, codingPath) }
}
