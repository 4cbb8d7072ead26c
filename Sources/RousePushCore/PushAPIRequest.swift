import RouseAPNs

/// One push as the API takes it (`POST /v1/push`, an element of `POST /v1/batch`'s `pushes`), before its app is
/// resolved. Defaults are `rouse send`'s: VoIP `apns-expiration: 0` and payload `{"aps":{}}`; background priority 5
/// and payload `{"aps":{"content-available":1}}`.
package struct PushAPIRequest: Sendable, Equatable {
    /// The app named in the request (or by the path); nil: the app whose topic matches `topic`.
    package var app: String?
    /// Device token (hex).
    package var token: String
    /// Push type.
    package var type: APNsPushType
    /// Bundle ID or full topic; nil: the app's topic.
    package var topic: String?
    /// Payload bytes (a string: its decoded bytes; an object: its bytes as written, whitespace between tokens removed).
    package var payload: [UInt8]?
    /// `apns-priority`.
    package var priority: Int?
    /// `apns-expiration`.
    package var expiration: Int64?
    /// `apns-collapse-id`.
    package var collapseID: String?
    /// `apns-id`.
    package var apnsID: String?
    /// Deadline in milliseconds (default: the app's).
    package var deadlineMs: Int?

    /// A request.
    package init(
        app: String? = nil, token: String, type: APNsPushType, topic: String? = nil, payload: [UInt8]? = nil,
        priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil,
        deadlineMs: Int? = nil
    ) {
        self.app = app
        self.token = token
        self.type = type
        self.topic = topic
        self.payload = payload
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.deadlineMs = deadlineMs
    }

    /// The push for an app whose bundle ID is `bundle`: the push type's topic suffix added when missing, the
    /// defaults of `rouse send` applied.
    package func push(bundle: String) -> APNsPush {
        let base = topic ?? bundle
        let suffix = type.topicSuffix ?? ""
        let fullTopic = base.hasSuffix(suffix) ? base : base + suffix
        var priority = self.priority.map { APNsPriority(rawValue: $0) }
        var expiration = self.expiration
        var payload = self.payload
        switch type {
        case .voip:
            if expiration == nil { expiration = 0 }
            if payload == nil { payload = Array(#"{"aps":{}}"#.utf8) }
        case .background:
            if priority == nil { priority = .conservePower }
            if payload == nil { payload = Array(#"{"aps":{"content-available":1}}"#.utf8) }
        default:
            if payload == nil { payload = Array(#"{"aps":{"alert":"Hello from Rouse"}}"#.utf8) }
        }
        return APNsPush(
            deviceToken: token, topic: fullTopic, pushType: type, priority: priority, apnsID: apnsID,
            expiration: expiration, collapseID: collapseID, payload: payload ?? [])
    }

    /// Parses a `POST /v1/push` body (``PushAPIJSONReader``: one pass, the full JSON grammar, precise errors).
    package static func parse(json body: [UInt8]) throws(PushServiceError) -> PushAPIRequest {
        let result = body.withUnsafeBufferPointer { bytes -> Result<PushAPIRequest, PushServiceError> in
            var reader = PushAPIJSONReader(bytes)
            do throws(PushServiceError) {
                return .success(try reader.push())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses a `POST /v1/batch` body: `{"pushes":[…]}` with at most `limit` elements.
    package static func parseBatch(json body: [UInt8], limit: Int) throws(PushServiceError) -> [PushAPIRequest] {
        let result = body.withUnsafeBufferPointer { bytes -> Result<[PushAPIRequest], PushServiceError> in
            var reader = PushAPIJSONReader(bytes)
            do throws(PushServiceError) {
                return .success(try reader.batch(limit: limit))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

extension PushAPIRequest {
    /// The request as the API takes it (the payload as a string, so its bytes go out verbatim).
    package var json: String {
        var s = "{\"token\":" + JSONText.quoted(token) + ",\"type\":" + JSONText.quoted(type.rawValue)
        if let app { s += ",\"app\":" + JSONText.quoted(app) }
        if let topic { s += ",\"topic\":" + JSONText.quoted(topic) }
        if let payload { s += ",\"payload\":" + JSONText.quoted(String(decoding: payload, as: UTF8.self)) }
        if let priority { s += ",\"priority\":\(priority)" }
        if let expiration { s += ",\"expiration\":\(expiration)" }
        if let collapseID { s += ",\"collapseID\":" + JSONText.quoted(collapseID) }
        if let apnsID { s += ",\"apnsID\":" + JSONText.quoted(apnsID) }
        if let deadlineMs { s += ",\"deadlineMs\":\(deadlineMs)" }
        return s + "}"
    }
}
