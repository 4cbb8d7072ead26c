import CRouseSystemd
import CSystemd

/// Writes ``DBusValue``s into an sd-bus message and reads them back, through sd-bus's non-variadic calls
/// (`append_basic`, `open_container`, `peek_type`, `read_basic`, `enter_container`). Every failure is thrown with the
/// call's name; nothing a peer sends can crash the reader (an unknown type is an error, as is a depth beyond
/// D-Bus's own limit of 64).
enum DBusMessageCoding {
    static let maximumDepth = 64

    // MARK: Writing

    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        for value in values { try append(value, to: message) }
    }

    static func append(_ value: DBusValue, to message: OpaquePointer) throws(DBusError) {
        func check(_ result: Int32, _ call: String) throws(DBusError) {
            if result < 0 { throw DBusError.call(call, result) }
        }
        func basic<T>(_ type: Character, _ value: T) throws(DBusError) {
            var copy = value
            try check(
                withUnsafePointer(to: &copy) { rouse_sd_bus_message_append_basic(message, Self.code(type), $0) },
                "sd_bus_message_append_basic")
        }
        func container(_ type: Character, _ contents: String, _ body: () throws(DBusError) -> Void)
            throws(DBusError)
        {
            try check(
                rouse_sd_bus_message_open_container(message, code(type), contents), "sd_bus_message_open_container")
            try body()
            try check(rouse_sd_bus_message_close_container(message), "sd_bus_message_close_container")
        }
        switch value {
        case .byte(let v): try basic("y", v)
        case .boolean(let v): try basic("b", Int32(v ? 1 : 0))
        case .int16(let v): try basic("n", v)
        case .uint16(let v): try basic("q", v)
        case .int32(let v): try basic("i", v)
        case .uint32(let v): try basic("u", v)
        case .int64(let v): try basic("x", v)
        case .uint64(let v): try basic("t", v)
        case .double(let v): try basic("d", v)
        case .string(let text), .objectPath(let text), .signature(let text):
            // String types take the string itself, not a pointer to it.
            let type = value.signature.utf8.first ?? UInt8(ascii: "s")
            try check(
                rouse_sd_bus_message_append_basic(message, CChar(bitPattern: type), text), "sd_bus_message_append_basic"
            )
        case .variant(let inner):
            try container("v", inner.signature) { () throws(DBusError) in try append(inner, to: message) }
        case .array(let element, let values):
            try container("a", element) { () throws(DBusError) in
                for item in values {
                    guard item.signature == element else {
                        throw .unexpected("array of \(element) given a \(item.signature)")
                    }
                    try append(item, to: message)
                }
            }
        case .dictionary(let key, let valueType, let entries):
            try container("a", "{" + key + valueType + "}") { () throws(DBusError) in
                for entry in entries {
                    try container("e", key + valueType) { () throws(DBusError) in
                        try append(entry.key, to: message)
                        try append(entry.value, to: message)
                    }
                }
            }
        case .structure(let fields):
            try container("r", fields.map(\.signature).joined()) { () throws(DBusError) in
                try append(fields, to: message)
            }
        }
    }

    // MARK: Reading

    /// Every value left at the message's current level.
    static func readAll(_ message: OpaquePointer, depth: Int = 0) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = try readNext(message, depth: depth) { values.append(value) }
        return values
    }

    /// The next value at the current level; nil at its end.
    static func readNext(_ message: OpaquePointer, depth: Int) throws(DBusError) -> DBusValue? {
        guard depth < maximumDepth else { throw .unexpected("nesting deeper than \(maximumDepth)") }
        var type: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let peeked = rouse_sd_bus_message_peek_type(message, &type, &contentsPointer)
        if peeked < 0 { throw .call("sd_bus_message_peek_type", peeked) }
        if peeked == 0 { return nil }
        let contents = contentsPointer.map { String(cString: $0) } ?? ""
        let character = Character(Unicode.Scalar(UInt8(bitPattern: type)))
        switch character {
        case "y": return .byte(try basic(message, type, UInt8(0)))
        case "b": return .boolean(try basic(message, type, Int32(0)) != 0)
        case "n": return .int16(try basic(message, type, Int16(0)))
        case "q": return .uint16(try basic(message, type, UInt16(0)))
        case "i": return .int32(try basic(message, type, Int32(0)))
        case "u": return .uint32(try basic(message, type, UInt32(0)))
        case "x": return .int64(try basic(message, type, Int64(0)))
        case "t": return .uint64(try basic(message, type, UInt64(0)))
        case "d": return .double(try basic(message, type, Double(0)))
        case "s", "o", "g":
            var pointer: UnsafePointer<CChar>?
            let result = rouse_sd_bus_message_read_basic(message, type, &pointer)
            if result < 0 { throw .call("sd_bus_message_read_basic", result) }
            let text = pointer.map { String(cString: $0) } ?? ""
            return character == "s" ? .string(text) : character == "o" ? .objectPath(text) : .signature(text)
        case "v":
            let inner = try inside(message, type, contents, depth: depth)
            guard inner.count == 1 else { throw .unexpected("a variant holding \(inner.count) values") }
            return .variant(inner[0])
        case "a":
            if contents.hasPrefix("{") {
                var entries: [DBusValue.DictionaryEntry] = []
                let entrySignature = String(contents.dropFirst().dropLast())
                try enter(message, type, contents)
                while true {
                    var entryType: CChar = 0
                    var entryContents: UnsafePointer<CChar>?
                    let more = rouse_sd_bus_message_peek_type(message, &entryType, &entryContents)
                    if more < 0 { throw .call("sd_bus_message_peek_type", more) }
                    if more == 0 { break }
                    let pair = try inside(message, entryType, entrySignature, depth: depth + 1)
                    guard pair.count == 2 else { throw .unexpected("a dictionary entry of \(pair.count) values") }
                    entries.append(.init(pair[0], pair[1]))
                }
                try exit(message)
                let (key, value) = splitEntry(entrySignature)
                return .dictionary(key: key, value: value, entries)
            }
            return .array(element: contents, try inside(message, type, contents, depth: depth))
        case "r":
            return .structure(try inside(message, type, contents, depth: depth))
        default:
            throw .unexpected("unsupported type '\(character)'")
        }
    }

    private static func basic<T>(_ message: OpaquePointer, _ type: CChar, _ initial: T) throws(DBusError) -> T {
        var value = initial
        let result = withUnsafeMutablePointer(to: &value) { rouse_sd_bus_message_read_basic(message, type, $0) }
        if result < 0 { throw .call("sd_bus_message_read_basic", result) }
        return value
    }

    private static func enter(_ message: OpaquePointer, _ type: CChar, _ contents: String) throws(DBusError) {
        let result = rouse_sd_bus_message_enter_container(message, type, contents)
        if result < 0 { throw .call("sd_bus_message_enter_container", result) }
    }

    private static func exit(_ message: OpaquePointer) throws(DBusError) {
        let result = rouse_sd_bus_message_exit_container(message)
        if result < 0 { throw .call("sd_bus_message_exit_container", result) }
    }

    private static func inside(_ message: OpaquePointer, _ type: CChar, _ contents: String, depth: Int)
        throws(DBusError) -> [DBusValue]
    {
        try enter(message, type, contents)
        let values = try readAll(message, depth: depth + 1)
        try exit(message)
        return values
    }

    /// `sv` → (`s`, `v`); `sa{sv}` → (`s`, `a{sv}`): a dictionary key is always one basic type character.
    static func splitEntry(_ signature: String) -> (String, String) {
        guard let first = signature.first else { return ("", "") }
        return (String(first), String(signature.dropFirst()))
    }

    static func code(_ type: Character) -> CChar {
        CChar(bitPattern: type.asciiValue ?? 0)
    }
}
