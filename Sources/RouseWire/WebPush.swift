/// The WebPush part of the device protocol (docs/webpush.md), shared by the gateway and the agent: the bodies of
/// `/device/v1/webpush` and `/device/v1/urgency`, the RFC 8030 urgency, and the `webpush` channel record.

/// RFC 8030 §5.3 urgency, ordered: a device whose minimum is `normal` is not sent `very-low` or `low` messages
/// until its minimum drops or they expire.
package enum WebPushUrgency: String, Sendable, Codable, CaseIterable, Comparable {
    /// "On power and Wi-Fi".
    case veryLow = "very-low"
    /// "On either power or Wi-Fi".
    case low
    /// "On neither power nor Wi-Fi" (the default when a sender gives none).
    case normal
    /// "Low battery".
    case high

    /// 0 (very-low) to 3 (high): what the gateway stores and compares.
    package var rank: Int {
        switch self {
        case .veryLow: 0
        case .low: 1
        case .normal: 2
        case .high: 3
        }
    }

    /// The urgency of rank `rank` (0…3), if any.
    package init?(rank: Int) {
        guard let found = Self.allCases.first(where: { $0.rank == rank }) else { return nil }
        self = found
    }

    /// Parses an `Urgency` header value (RFC 8030 §5.3: one of the four tokens, lower case; surrounding blanks
    /// are allowed).
    package init?(header: String) {
        var value = Substring(header)
        while value.first == " " || value.first == "\t" { value = value.dropFirst() }
        while value.last == " " || value.last == "\t" { value = value.dropLast() }
        self.init(rawValue: String(value))
    }

    package static func < (a: WebPushUrgency, b: WebPushUrgency) -> Bool { a.rank < b.rank }
}

/// `POST /device/v1/webpush`: a subscription for one app's registration on the device.
package struct WebPushSubscriptionRequest: Sendable, Equatable, Codable {
    /// The app's id (its D-Bus name, e.g. `org.kde.tokodon`): 1 to 255 printable ASCII bytes.
    package var app: String
    /// The device's label for this registration (1 to 100 printable ASCII bytes; a distributor gives its own id,
    /// not the connector's token).
    package var token: String
    /// The application server's VAPID public key (P-256 uncompressed point, base64url, 87 characters), if the app
    /// gave one: pushes to the endpoint then need a VAPID `Authorization` with this `k`.
    package var vapid: String?

    /// A request.
    package init(app: String, token: String, vapid: String?) {
        self.app = app
        self.token = token
        self.vapid = vapid
    }
}

/// A subscription as the gateway answers and lists it.
package struct WebPushSubscription: Sendable, Equatable, Codable {
    /// The endpoint's id: base64url of 32 random bytes (the last path segment of `endpoint`).
    package var id: String
    /// The RFC 8030 push resource the app hands its server: `https://<origin>/wp/<id>`.
    package var endpoint: String
    /// The app's id.
    package var app: String
    /// The device's label.
    package var token: String
    /// The VAPID public key, if the subscription is restricted to it.
    package var vapid: String?
    /// When it was made, UNIX milliseconds.
    package var createdAt: Int64

    /// A subscription.
    package init(id: String, endpoint: String, app: String, token: String, vapid: String?, createdAt: Int64) {
        self.id = id
        self.endpoint = endpoint
        self.app = app
        self.token = token
        self.vapid = vapid
        self.createdAt = createdAt
    }
}

/// `GET /device/v1/webpush`.
package struct WebPushSubscriptionList: Sendable, Equatable, Codable {
    /// The device's live subscriptions, by creation time.
    package var subscriptions: [WebPushSubscription]

    /// A list.
    package init(subscriptions: [WebPushSubscription]) { self.subscriptions = subscriptions }
}

/// `POST /device/v1/urgency`: the device's minimum urgency from now on (as the `urgency` header of the channel
/// request, which sets it when the channel opens).
package struct WebPushUrgencyRequest: Sendable, Equatable, Codable {
    /// The lowest urgency the device wants to be sent now.
    package var urgency: WebPushUrgency

    /// A request.
    package init(urgency: WebPushUrgency) { self.urgency = urgency }
}

/// What the device channel request declares (`GET /device/v1/channel` headers).
package enum ChannelFeatures {
    /// `rouse-features: webpush`: the agent reads `webpush` records. Only such channels get them (an older agent
    /// would leave them unacknowledged and fill its window).
    package static let header = "rouse-features"
    /// The feature token for WebPush records.
    package static let webPush = "webpush"
    /// `urgency: <very-low|low|normal|high>`: the channel's minimum urgency (RFC 8030 §5.3); absent: very-low
    /// (everything is sent).
    package static let urgencyHeader = "urgency"

    /// Whether a `rouse-features` value lists `feature` (comma-separated tokens, blanks ignored).
    package static func lists(_ value: String?, _ feature: String) -> Bool {
        guard let value else { return false }
        return value.split(separator: ",").contains { $0.trimmingCharacters(in: " \t") == feature }
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in blanks: String) -> Substring {
        var value = self
        while let first = value.first, blanks.contains(first) { value = value.dropFirst() }
        while let last = value.last, blanks.contains(last) { value = value.dropLast() }
        return value
    }
}

extension ChannelRecord {
    /// `webpush`: one RFC 8030 message for a subscription of the device.
    package struct WebPush: Sendable, Equatable, Codable {
        /// The delivery id the device acknowledges (`POST /device/v1/ack`), a decimal number.
        package var id: String
        /// The subscription's id (the endpoint's last path segment).
        package var subscription: String
        /// The message's urgency.
        package var urgency: WebPushUrgency
        /// The sender's `Topic`, if any: a newer message with the same topic replaced older pending ones.
        package var topic: String?
        /// UNIX seconds when the gateway stops offering it (0: `TTL: 0`, delivered only because the channel was
        /// open).
        package var expiration: Int64
        /// UNIX milliseconds when the gateway accepted it.
        package var receivedAt: Int64
        /// The body, base64: the raw POST data (RFC 8291 `aes128gcm` carries its own header; Matrix gateway
        /// notifications are plaintext JSON), as UnifiedPush's `Message` hands it to the app.
        package var payload: String

        /// A record.
        package init(
            id: String, subscription: String, urgency: WebPushUrgency, topic: String?, expiration: Int64,
            receivedAt: Int64, payload: String
        ) {
            self.id = id
            self.subscription = subscription
            self.urgency = urgency
            self.topic = topic
            self.expiration = expiration
            self.receivedAt = receivedAt
            self.payload = payload
        }

        /// The record as the gateway writes it (members in a fixed order, no newline inside, then `\n`).
        package var text: String {
            var text = "{\"type\":\"webpush\",\"id\":\(JSONString.quoted(id))"
            text += ",\"subscription\":\(JSONString.quoted(subscription)),\"urgency\":\"\(urgency.rawValue)\""
            if let topic { text += ",\"topic\":\(JSONString.quoted(topic))" }
            text += ",\"expiration\":\(expiration),\"receivedAt\":\(receivedAt)"
            text += ",\"payload\":\(JSONString.quoted(payload))}"
            return text
        }
    }
}
