import Foundation
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
    /// Payload bytes (sent verbatim when given as a string; re-encoded compactly when given as an object).
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

    private static let fields: Set<String> = [
        "app", "token", "type", "topic", "payload", "priority", "expiration", "collapseID", "apnsID", "deadlineMs",
    ]

    /// Parses a `POST /v1/push` body.
    package static func parse(json body: [UInt8]) throws(PushServiceError) -> PushAPIRequest {
        try parse(object: try object(body), at: "")
    }

    /// Parses a `POST /v1/batch` body: `{"pushes":[…]}` with at most `limit` elements.
    package static func parseBatch(json body: [UInt8], limit: Int) throws(PushServiceError) -> [PushAPIRequest] {
        let top = try object(body)
        for key in top.keys where key != "pushes" { throw .request("unknown field '\(key)'") }
        guard let list = top["pushes"] as? [Any] else { throw .request("'pushes' must be an array of pushes") }
        guard !list.isEmpty else { throw .request("'pushes' is empty") }
        guard list.count <= limit else { throw .request("batch of \(list.count) pushes exceeds \(limit)") }
        var requests: [PushAPIRequest] = []
        for (index, element) in list.enumerated() {
            guard let o = element as? [String: Any] else { throw .request("'pushes[\(index)]' is not an object") }
            requests.append(try parse(object: o, at: "pushes[\(index)]."))
        }
        return requests
    }

    private static func object(_ body: [UInt8]) throws(PushServiceError) -> [String: Any] {
        guard !body.isEmpty else { throw .request("empty body: a JSON object is required") }
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            throw .request(
                "body is not valid JSON: \((error as NSError).userInfo[NSDebugDescriptionErrorKey] ?? error)")
        }
        guard let o = value as? [String: Any] else { throw .request("body must be a JSON object") }
        return o
    }

    private static func parse(object o: [String: Any], at prefix: String) throws(PushServiceError) -> PushAPIRequest {
        for key in o.keys.sorted() where !fields.contains(key) { throw .request("unknown field '\(prefix)\(key)'") }
        func string(_ key: String) throws(PushServiceError) -> String? {
            guard let v = o[key] else { return nil }
            guard let s = v as? String else { throw .request("'\(prefix)\(key)' must be a string") }
            return s
        }
        func integer(_ key: String) throws(PushServiceError) -> Int64? {
            guard let v = o[key] else { return nil }
            guard let n = v as? NSNumber, let i = Int64(exactly: n.doubleValue) else {
                throw .request("'\(prefix)\(key)' must be an integer")
            }
            return i
        }
        guard let token = try string("token") else { throw .request("missing '\(prefix)token'") }
        guard let typeName = try string("type") else {
            throw .request("missing '\(prefix)type' (voip, background, alert, …)")
        }
        let type = APNsPushType(rawValue: typeName)
        guard type.isKnown else { throw .request("'\(prefix)type': unknown push type '\(typeName)'") }
        var payload: [UInt8]?
        if let p = o["payload"] {
            if let text = p as? String {
                payload = Array(text.utf8)
            } else if p is [String: Any] {
                do {
                    payload = Array(try JSONSerialization.data(withJSONObject: p, options: [.withoutEscapingSlashes]))
                } catch {
                    throw .request("'\(prefix)payload' cannot be encoded: \(error)")
                }
            } else {
                throw .request("'\(prefix)payload' must be a JSON object or a string holding one")
            }
        }
        // A priority other than 10, 5 or 1 is left to the pre-flight, which answers BadPriority as APNs would.
        let priority = try integer("priority")
        let deadline = try integer("deadlineMs")
        if let deadline, !(1...3_600_000).contains(deadline) {
            throw .request("'\(prefix)deadlineMs' must be 1–3600000")
        }
        return PushAPIRequest(
            app: try string("app"), token: token, type: type, topic: try string("topic"), payload: payload,
            priority: priority.flatMap { Int(exactly: $0) }, expiration: try integer("expiration"),
            collapseID: try string("collapseID"), apnsID: try string("apnsID"), deadlineMs: deadline.map { Int($0) })
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
