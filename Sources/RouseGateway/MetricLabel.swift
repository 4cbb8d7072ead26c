import RouseAPNs

/// The values a label of the gateway's metrics may take: closed sets, fixed in the code. A value from anywhere else
/// (a header a provider sent, a reason nobody listed) becomes `other` (`invalid` for a push type), so no request
/// can add a series: before, each distinct `apns-push-type` of a rejected request named a new series forever.
enum MetricLabel {
    /// A documented push type, `none` when the header was absent, `invalid` for anything else.
    static func pushType(_ raw: String?) -> String {
        guard let raw else { return "none" }
        return pushTypes.contains(raw) ? raw : raw == "none" ? "none" : "invalid"
    }

    /// An outcome of a push in, a push out or a drop reason; `other` when not in the set.
    static func outcome(_ raw: String) -> String { outcomes.contains(raw) ? raw : "other" }

    /// A listener name; `other` when not in the set.
    static func listener(_ raw: String) -> String { listeners.contains(raw) ? raw : "other" }

    /// A budget's name; `other` when not in the set.
    static func limit(_ raw: String) -> String { limits.contains(raw) ? raw : "other" }

    static let pushTypes = Set(APNsPushType.known.map(\.rawValue) + [WebPushSubscriptionRecord.pushType])

    /// What `pushes_in` ends as, what `pushes_out` counts, why `dropped` dropped: the gateway's own words and every
    /// APNs reason Rouse knows.
    static let outcomes: Set<String> =
        [
            "stored", "delivered-now", "dropped-offline", "expired", "sent", "collapsed", "background-slot",
            "expiration-zero-offline", "expired-offline", "channel-closed", "token-quota", "device-quota",
            // WebPush ingest (docs/webpush.md): why a message was refused.
            "bad-request", "unknown-subscription", "unregistered", "vapid-missing", "vapid-invalid", "rate-limited",
            "too-large", "unavailable", "matrix-rejected",
        ].reduce(into: Set(APNsReason.known.map(\.rawValue))) { $0.insert($1) }

    static let listeners: Set<String> = ["provider", "device", "admin", "nodes", "webpush"]

    static let limits: Set<String> = [
        "connections-refused", "connections-refused-per-address", "accept-paused", "streams-refused-buffer",
        "request-timeout", "authentication-timeout", "device-queue-full", "bad-message", "forged-message",
        "streams-refused-listener-buffer", "webpush-subscriptions-device", "webpush-subscriptions-app",
        "webpush-rate",
    ]
}
