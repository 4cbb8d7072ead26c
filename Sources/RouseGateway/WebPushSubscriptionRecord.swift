/// A WebPush subscription as the store keeps it (docs/webpush.md): the endpoint's id, its device, the app and
/// label the device gave, and the VAPID key that restricts it.
///
/// Its messages are `StoredPush` rows like any push: `token` and `topic` are the subscription's id (so the
/// storage quota per token and `Topic` replacement are per subscription), `pushType` is `webpush`, `priority`
/// holds the RFC 8030 urgency's rank (0 very-low … 3 high), `collapseID` the sender's `Topic`, and `apnsID` the
/// body's `Content-Encoding` (empty: none).
package struct WebPushSubscriptionRecord: Sendable, Hashable {
    /// base64url of 32 random bytes: the endpoint's last path segment.
    package var id: String
    /// The owning device.
    package var deviceID: String
    /// The app's id (D-Bus name).
    package var app: String
    /// The device's label for the registration.
    package var token: String
    /// The VAPID public key (base64url of the uncompressed P-256 point), if restricted.
    package var vapidKey: String?
    /// Creation time, UNIX milliseconds.
    package var createdAt: Int64
    /// When it was deleted (410 from then on), UNIX milliseconds.
    package var revokedAt: Int64?

    /// A record.
    package init(
        id: String, deviceID: String, app: String, token: String, vapidKey: String?, createdAt: Int64,
        revokedAt: Int64?
    ) {
        self.id = id
        self.deviceID = deviceID
        self.app = app
        self.token = token
        self.vapidKey = vapidKey
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// `StoredPush.pushType` of WebPush messages.
    package static let pushType = "webpush"
}

/// The WebPush operations inside one store transaction (both backends; schema version 7).
package protocol WebPushStoreTransaction {
    /// Adds a subscription.
    func insertWebPushSubscription(_ subscription: WebPushSubscriptionRecord) throws
    /// The subscription with this id, deleted or not.
    func webPushSubscription(_ id: String) throws -> WebPushSubscriptionRecord?
    /// The device's live subscriptions, by creation time.
    func webPushSubscriptions(deviceID: String) throws -> [WebPushSubscriptionRecord]
    /// Marks a device's subscription deleted (410 from then on) and drops its pending messages; returns their ids,
    /// or `nil` if the device has no such live subscription.
    func revokeWebPushSubscription(_ id: String, deviceID: String, at time: Int64) throws -> [Int64]?
    /// The device's pending, unexpired pushes not in `excluding`, VoIP first, then by id, at most `limit`; WebPush
    /// messages only with an urgency rank of at least `webPushMinimum` (above 3: none).
    func pending(deviceID: String, excluding: Set<Int64>, limit: Int, now: Int64, webPushMinimum: Int) throws
        -> [StoredPush]
}

extension StoredPush {
    /// Whether this is a WebPush message.
    package var isWebPush: Bool { pushType == WebPushSubscriptionRecord.pushType }
}
