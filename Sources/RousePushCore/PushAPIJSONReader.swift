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

    /// The body.
    let bytes: UnsafeBufferPointer<UInt8>
    /// The cursor: the offset of the next byte to read.
    var index = 0

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
}
