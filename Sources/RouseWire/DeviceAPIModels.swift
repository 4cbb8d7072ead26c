/// The device REST API's bodies (docs/gateway.md, "Device API"), one model per request and reply, shared by the
/// gateway, the agent and the tests. The WebPush ones are in WebPush.swift (`WebPushSubscriptionRequest`,
/// `WebPushSubscription`, `WebPushSubscriptionList`, `WebPushUrgencyRequest`).

/// `POST /device/v1/enroll` with a one-time secret (a certificate enrolls with an empty body).
package struct DeviceEnrollRequest: DeviceAPIMessage {
    /// The one-time enrollment secret, hex (32 to 128 digits).
    package var secret: String

    /// A request.
    package init(secret: String) { self.secret = secret }

    package var json: String { "{\"secret\":\(JSONString.quoted(secret))}" }
}

/// The answer to an enrollment (201 new, 200 a certificate's device enrolled before).
package struct DeviceEnrollReply: DeviceAPIMessage {
    /// The device id.
    package var deviceID: String
    /// `<device id>.<secret hex>`, the bearer credential (only for a secret's enrollment: a certificate is its own).
    package var credential: String?

    /// A reply.
    package init(deviceID: String, credential: String?) {
        self.deviceID = deviceID
        self.credential = credential
    }

    package var json: String {
        var text = "{\"deviceID\":\(JSONString.quoted(deviceID))"
        if let credential { text += ",\"credential\":\(JSONString.quoted(credential))" }
        return text + "}"
    }
}

/// `POST /device/v1/tokens`: the token for a topic (created, or the live one).
package struct DeviceTokenRequest: DeviceAPIMessage {
    /// The topic (bundle id), 1 to 255 printable ASCII bytes without spaces.
    package var topic: String

    /// A request.
    package init(topic: String) { self.topic = topic }

    package var json: String { "{\"topic\":\(JSONString.quoted(topic))}" }
}

/// A device token as `POST /device/v1/tokens` answers it (201 new, 200 existing) and `GET` lists it.
package struct DeviceToken: DeviceAPIMessage {
    /// The token, 64 hex digits: what providers address.
    package var token: String
    /// Its topic.
    package var topic: String
    /// When it was made, UNIX milliseconds.
    package var createdAt: Int64

    /// A token.
    package init(token: String, topic: String, createdAt: Int64) {
        self.token = token
        self.topic = topic
        self.createdAt = createdAt
    }

    package var json: String {
        "{\"token\":\(JSONString.quoted(token)),\"topic\":\(JSONString.quoted(topic)),\"createdAt\":\(createdAt)}"
    }
}

/// `GET /device/v1/tokens`: the device's live tokens.
package struct DeviceTokenList: DeviceAPIMessage {
    /// The live tokens.
    package var tokens: [DeviceToken]

    /// A list.
    package init(tokens: [DeviceToken]) { self.tokens = tokens }

    package var json: String { "{\"tokens\":[" + tokens.map(\.json).joined(separator: ",") + "]}" }
}

/// The answer to `DELETE /device/v1/tokens/<token>` and `DELETE /device/v1/webpush/<id>`: what was revoked, when.
package struct DeviceRevocation: DeviceAPIMessage {
    /// The kind of thing revoked, which names the member: a token or a subscription.
    package enum Kind: String, Sendable, Equatable, Codable {
        /// `{"token":…}`.
        case token
        /// `{"id":…}` (a WebPush subscription).
        case id
    }

    /// Which member holds the revoked value.
    package var kind: Kind
    /// The token or subscription id.
    package var value: String
    /// When, UNIX milliseconds.
    package var revokedAt: Int64

    /// A revocation.
    package init(_ kind: Kind, _ value: String, revokedAt: Int64) {
        self.kind = kind
        self.value = value
        self.revokedAt = revokedAt
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Reads `{"token":…,"revokedAt":…}` or `{"id":…,"revokedAt":…}`.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let kind: Kind = container.contains(Key(stringValue: "token")) ? .token : .id
        self.kind = kind
        value = try container.decode(String.self, forKey: Key(stringValue: kind.rawValue))
        revokedAt = try container.decode(Int64.self, forKey: Key(stringValue: "revokedAt"))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(value, forKey: Key(stringValue: kind.rawValue))
        try container.encode(revokedAt, forKey: Key(stringValue: "revokedAt"))
    }

    package var json: String { "{\"\(kind.rawValue)\":\(JSONString.quoted(value)),\"revokedAt\":\(revokedAt)}" }
}

/// `POST /device/v1/ack`: delivery ids the device has handled (decimal strings, as channel records carry them).
package struct DeviceAckRequest: DeviceAPIMessage {
    /// The delivery ids.
    package var ids: [String]

    /// A request.
    package init(ids: [String]) { self.ids = ids }

    package var json: String { "{\"ids\":[" + ids.map(JSONString.quoted).joined(separator: ",") + "]}" }
}

/// The answer to an acknowledgement.
package struct DeviceAckReply: DeviceAPIMessage {
    /// Ids that were in flight or stored, now done.
    package var acked: Int
    /// Ids the gateway did not know (acknowledged before, expired, or never sent).
    package var unknown: Int

    /// A reply.
    package init(acked: Int, unknown: Int) {
        self.acked = acked
        self.unknown = unknown
    }

    package var json: String { "{\"acked\":\(acked),\"unknown\":\(unknown)}" }
}

/// `POST /device/v1/handlers`: the agent's handlers' strikes and VoIP blocks, by topic (it replaces the last one).
package struct DeviceHandlerReport: DeviceAPIMessage {
    /// One topic's handler state.
    package struct Handler: Codable, Sendable, Equatable {
        /// The handler's topic.
        package var topic: String
        /// Missed VoIP call reports inside the strike window.
        package var strikes: Int
        /// Whether VoIP launches are stopped until the handler registers again.
        package var voipBlocked: Bool

        /// A handler's state.
        package init(topic: String, strikes: Int, voipBlocked: Bool) {
            self.topic = topic
            self.strikes = strikes
            self.voipBlocked = voipBlocked
        }

        /// `{"topic":…,"strikes":…,"voipBlocked":…}`.
        package var json: String {
            "{\"topic\":\(JSONString.quoted(topic)),\"strikes\":\(strikes),\"voipBlocked\":\(voipBlocked)}"
        }
    }

    /// The handlers, one per topic.
    package var handlers: [Handler]

    /// A report.
    package init(handlers: [Handler]) { self.handlers = handlers }

    package var json: String { "{\"handlers\":[" + handlers.map(\.json).joined(separator: ",") + "]}" }
}

/// The answer to a handler report.
package struct DeviceHandlerReportReply: DeviceAPIMessage {
    /// How many handlers the gateway stored.
    package var handlers: Int
    /// When, UNIX milliseconds.
    package var reportedAt: Int64

    /// A reply.
    package init(handlers: Int, reportedAt: Int64) {
        self.handlers = handlers
        self.reportedAt = reportedAt
    }

    package var json: String { "{\"handlers\":\(handlers),\"reportedAt\":\(reportedAt)}" }
}

/// Every refused device request's body: a short code and what was wrong (`$.ids[0]: …`).
package struct DeviceAPIFailure: DeviceAPIMessage {
    /// The code, e.g. `badJSON`, `badTopic`, `tooManyRequests`.
    package var error: String
    /// The detail, naming the member at fault where there is one.
    package var detail: String

    /// A failure.
    package init(error: String, detail: String) {
        self.error = error
        self.detail = detail
    }

    package var json: String { "{\"error\":\(JSONString.quoted(error)),\"detail\":\(JSONString.quoted(detail))}" }
}

extension WebPushSubscriptionRequest: DeviceAPIMessage {
    /// `{"app":…,"token":…}` and `"vapid"` when there is one.
    package var json: String {
        var text = "{\"app\":\(JSONString.quoted(app)),\"token\":\(JSONString.quoted(token))"
        if let vapid { text += ",\"vapid\":\(JSONString.quoted(vapid))" }
        return text + "}"
    }
}

extension WebPushUrgencyRequest: DeviceAPIMessage {
    /// `{"urgency":"<very-low|low|normal|high>"}` (also the answer to `POST /device/v1/urgency`).
    package var json: String { "{\"urgency\":\"\(urgency.rawValue)\"}" }
}

extension WebPushSubscription: DeviceAPIMessage {
    /// Members in name order (as the gateway wrote them with a sorted-keys encoder), `vapid` only when there is one.
    package var json: String {
        var text = "{\"app\":\(JSONString.quoted(app)),\"createdAt\":\(createdAt)"
        text += ",\"endpoint\":\(JSONString.quoted(endpoint)),\"id\":\(JSONString.quoted(id))"
        text += ",\"token\":\(JSONString.quoted(token))"
        if let vapid { text += ",\"vapid\":\(JSONString.quoted(vapid))" }
        return text + "}"
    }
}

extension WebPushSubscriptionList: DeviceAPIMessage {
    /// `{"subscriptions":[…]}`.
    package var json: String { "{\"subscriptions\":[" + subscriptions.map(\.json).joined(separator: ",") + "]}" }
}
