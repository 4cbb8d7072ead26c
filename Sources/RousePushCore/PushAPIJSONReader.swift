import RouseAPNs

/// The push API's request bodies (`POST /v1/push`, `POST /v1/batch`) read in one pass, straight into
/// ``PushAPIRequest``s.
///
/// Hand-written on purpose: the bodies are flat objects of ten known fields, and `JSONSerialization` (what this
/// replaces) built an `NSDictionary` of boxed `NSString`/`NSNumber` values for each body that the service then cast
/// back field by field, and decoded and re-encoded an object payload; under `perf` that was the largest piece of
/// rouse-pushd's own CPU per `/v1/push` push (docs/push-service.md, "Speed"). This reader checks the full JSON grammar
/// (RFC 8259: strings with their escapes and valid UTF-8, numbers, literals, nesting bounded at ``maxDepth``), keeps an
/// object payload's bytes as written (whitespace outside strings dropped, key order and escapes kept), rejects
/// duplicate fields, and answers garbage with what is wrong and the byte offset where.
struct PushAPIJSONReader {
    /// Objects and arrays nested deeper than this (the body's object is level 1) are refused: the reader recurses
    /// once per level.
    static let maxDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    // MARK: Requests

    /// A value of a push's field, as read; its type is checked after the whole object is read, in a fixed order, so
    /// that the message does not depend on the order of the fields.
    enum Value {
        case string(String)
        /// A number; nil when it is not an integer that fits 64 bits.
        case integer(Int64?)
        /// An object (only kept for `payload`): its bytes without insignificant whitespace.
        case object([UInt8])
        /// Anything else (`null`, `true`, an array, an object where none is taken).
        case other
    }

    /// The fields of a push, in the order their types are checked.
    enum Field: Int, CaseIterable {
        case token, type, payload, priority, deadlineMs, app, topic, expiration, collapseID, apnsID

        init?(_ name: String) {
            switch name {
            case "token": self = .token
            case "type": self = .type
            case "payload": self = .payload
            case "priority": self = .priority
            case "deadlineMs": self = .deadlineMs
            case "app": self = .app
            case "topic": self = .topic
            case "expiration": self = .expiration
            case "collapseID": self = .collapseID
            case "apnsID": self = .apnsID
            default: return nil
            }
        }

        var name: String {
            switch self {
            case .token: "token"
            case .type: "type"
            case .payload: "payload"
            case .priority: "priority"
            case .deadlineMs: "deadlineMs"
            case .app: "app"
            case .topic: "topic"
            case .expiration: "expiration"
            case .collapseID: "collapseID"
            case .apnsID: "apnsID"
            }
        }
    }

    /// The whole body: one push object and nothing after it.
    mutating func push() throws(PushServiceError) -> PushAPIRequest {
        try topObject()
        let result = try pushObject(at: "", depth: 1)
        try end()
        return try result.get()
    }

    /// The whole body: `{"pushes":[…]}` with 1…`limit` push objects. A syntax error anywhere wins; then an unknown
    /// field, `pushes` missing or not an array, an empty or too long batch, and last the first wrong push.
    mutating func batch(limit: Int) throws(PushServiceError) -> [PushAPIRequest] {
        try topObject()
        var unknown: String?
        var sawPushes = false
        var count = 0
        var pushesIsArray = false
        var firstError: PushServiceError?
        var requests: [PushAPIRequest] = []
        try members { (reader: inout PushAPIJSONReader, key: String) throws(PushServiceError) in
            guard key == "pushes" else {
                if unknown == nil { unknown = key }
                try reader.skipValue(depth: 2, copy: nil)
                return
            }
            guard !sawPushes else { throw reader.syntax("duplicate field 'pushes'") }
            sawPushes = true
            guard reader.peek == UInt8(ascii: "[") else {
                try reader.skipValue(depth: 2, copy: nil)
                return
            }
            pushesIsArray = true
            try reader.elements(depth: 2) { (reader: inout PushAPIJSONReader) throws(PushServiceError) in
                let at = count
                count += 1
                guard reader.peek == UInt8(ascii: "{") else {
                    try reader.skipValue(depth: 3, copy: nil)
                    if firstError == nil { firstError = .request("'pushes[\(at)]' is not an object") }
                    return
                }
                let result = try reader.pushObject(at: "pushes[\(at)].", depth: 3)
                switch result {
                case .success(let request): if count <= limit && firstError == nil { requests.append(request) }
                case .failure(let error): if firstError == nil { firstError = error }
                }
            }
        }
        try end()
        if let unknown { throw .request("unknown field '\(unknown)'") }
        guard pushesIsArray else { throw .request("'pushes' must be an array of pushes") }
        guard count > 0 else { throw .request("'pushes' is empty") }
        guard count <= limit else { throw .request("batch of \(count) pushes exceeds \(limit)") }
        if let firstError { throw firstError }
        return requests
    }

    /// The body's start: something, and an object. A valid JSON value that is not an object is named as such.
    private mutating func topObject() throws(PushServiceError) {
        guard !bytes.isEmpty else { throw .request("empty body: a JSON object is required") }
        skipSpace()
        guard peek == UInt8(ascii: "{") else {
            try skipValue(depth: 1, copy: nil)
            try end()
            throw .request("body must be a JSON object")
        }
    }

    /// Only whitespace left.
    private mutating func end() throws(PushServiceError) {
        skipSpace()
        guard index == bytes.count else { throw syntax("\(describe(bytes[index])) after the value") }
    }

    /// One push object (the cursor on its `{`): the request, or what is wrong with its fields.
    private mutating func pushObject(at prefix: String, depth: Int) throws(PushServiceError) -> Result<
        PushAPIRequest, PushServiceError
    > {
        var values = [Value?](repeating: nil, count: Field.allCases.count)
        var unknown: String?
        try members { (reader: inout PushAPIJSONReader, key: String) throws(PushServiceError) in
            guard let field = Field(key) else {
                if unknown == nil { unknown = key }
                try reader.skipValue(depth: depth + 1, copy: nil)
                return
            }
            guard values[field.rawValue] == nil else { throw reader.syntax("duplicate field '\(prefix)\(key)'") }
            values[field.rawValue] = try reader.fieldValue(keepObject: field == .payload, depth: depth + 1)
        }
        if let unknown { return .failure(.request("unknown field '\(prefix)\(unknown)'")) }
        do throws(PushServiceError) {
            return .success(try Self.request(values, prefix: prefix))
        } catch {
            return .failure(error)
        }
    }

    /// The request of a push's fields, with the messages of the API's documented errors.
    private static func request(_ values: [Value?], prefix: String) throws(PushServiceError) -> PushAPIRequest {
        func string(_ field: Field) throws(PushServiceError) -> String? {
            switch values[field.rawValue] {
            case nil: return nil
            case .string(let s): return s
            default: throw .request("'\(prefix)\(field.name)' must be a string")
            }
        }
        func integer(_ field: Field) throws(PushServiceError) -> Int64? {
            switch values[field.rawValue] {
            case nil: return nil
            case .integer(let n?): return n
            default: throw .request("'\(prefix)\(field.name)' must be an integer")
            }
        }
        guard let token = try string(.token) else { throw .request("missing '\(prefix)token'") }
        guard let typeName = try string(.type) else {
            throw .request("missing '\(prefix)type' (voip, background, alert, …)")
        }
        let type = APNsPushType(rawValue: typeName)
        guard type.isKnown else { throw .request("'\(prefix)type': unknown push type '\(typeName)'") }
        var payload: [UInt8]?
        switch values[Field.payload.rawValue] {
        case nil: payload = nil
        case .string(let text): payload = Array(text.utf8)
        case .object(let bytes): payload = bytes
        default: throw .request("'\(prefix)payload' must be a JSON object or a string holding one")
        }
        // A priority other than 10, 5 or 1 is left to the pre-flight, which answers BadPriority as APNs would.
        let priority = try integer(.priority)
        let deadline = try integer(.deadlineMs)
        if let deadline, !(1...3_600_000).contains(deadline) {
            throw .request("'\(prefix)deadlineMs' must be 1–3600000")
        }
        return PushAPIRequest(
            app: try string(.app), token: token, type: type, topic: try string(.topic), payload: payload,
            priority: priority.flatMap { Int(exactly: $0) }, expiration: try integer(.expiration),
            collapseID: try string(.collapseID), apnsID: try string(.apnsID), deadlineMs: deadline.map { Int($0) })
    }

    /// A field's value: strings decoded, numbers as integers, a payload object's compact bytes, anything else skipped.
    private mutating func fieldValue(keepObject: Bool, depth: Int) throws(PushServiceError) -> Value {
        switch peek ?? 0 {
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .integer(try integer())
        case UInt8(ascii: "{") where keepObject:
            var copy: [UInt8] = []
            copy.reserveCapacity(bytes.count - index)
            try skipValue(depth: depth, copy: &copy)
            return .object(copy)
        default:
            try skipValue(depth: depth, copy: nil)
            return .other
        }
    }

    // MARK: Grammar

    /// The byte under the cursor, or nil at the end.
    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// A syntax error at the cursor.
    private func syntax(_ what: String) -> PushServiceError {
        .request("body is not valid JSON: \(what) at byte \(index)")
    }

    private func describe(_ byte: UInt8?) -> String {
        guard let byte else { return "unexpected end" }
        return "unexpected " + Self.name(byte)
    }

    /// `'x'` for a visible ASCII byte, `byte 0xNN` for others.
    private static func name(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// An object's members (the cursor on its `{`): `body` reads each value, the cursor on it.
    private mutating func members(
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
    private mutating func elements(
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
    private mutating func skipValue(depth: Int, copy: UnsafeMutablePointer<[UInt8]>?) throws(PushServiceError) {
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

    private mutating func literal(_ word: StaticString) throws(PushServiceError) {
        let n = word.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: n)
        guard bytes.count - index >= n, bytes[index..<index + n].elementsEqual(expected) else {
            throw syntax("\(describe(peek)) where a value belongs")
        }
        index += n
    }

    /// A number (RFC 8259's grammar); true when it is written as an integer (no fraction, no exponent).
    private mutating func number() throws(PushServiceError) -> Bool {
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
    private mutating func integer() throws(PushServiceError) -> Int64? {
        let start = index
        let integral = try number()
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if integral { return Int64(text) }
        guard let value = Double(text), value.isFinite else { return nil }
        return Int64(exactly: value)
    }

    /// A string (the cursor on its opening quote), its escapes decoded; control characters and invalid UTF-8 refused.
    private mutating func string() throws(PushServiceError) -> String {
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
    private mutating func escape(into decoded: inout [UInt8]) throws(PushServiceError) {
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

    private mutating func hex4() throws(PushServiceError) -> UInt32 {
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
