import FoundationEssentials
import RouseAPNs
import RouseHTTP2
import RousePushCore
import RouseWire
import Synchronization

/// A WebPush message that passed the listener's checks (docs/webpush.md), on its way to the store thread.
struct WebPushSubmission: Sendable {
    /// The endpoint's id.
    var subscriptionID: String
    /// `TTL` as sent, seconds.
    var ttl: Int64
    var urgency: WebPushUrgency
    /// `Topic`, if any (already checked: ≤ 32 base64url characters).
    var topic: String?
    /// `Authorization: vapid …`, if sent.
    var vapid: WebPushVAPID?
    /// Whether an `Authorization` header was sent at all (one that is not VAPID is a 403, not a 401).
    var authorizationSent: Bool
    var body: [UInt8]
    var receivedAt: Int64
}

/// The answer to one WebPush request.
struct WebPushReply: Error, Sendable, Equatable {
    var status: Int
    var headers: [(String, String)] = []
    var body: String = ""
    /// The `pushes_in_total` outcome.
    var outcome: String

    static func == (a: WebPushReply, b: WebPushReply) -> Bool {
        a.status == b.status && a.body == b.body && a.outcome == b.outcome && a.headers.map(\.0) == b.headers.map(\.0)
            && a.headers.map(\.1) == b.headers.map(\.1)
    }

    /// An error: a one-line text body that says what was wrong.
    static func error(_ status: Int, _ outcome: String, _ message: String, headers: [(String, String)] = []) -> Self {
        WebPushReply(status: status, headers: headers, body: message + "\n", outcome: outcome)
    }
}

/// Token buckets per subscription (store thread only). Bounded: past `maxEntries` buckets the full ones (idle
/// subscriptions) are forgotten, and if that is not enough, all of them (a burst is then allowed once more).
struct WebPushRates: Sendable {
    static let maxEntries = 100_000
    private var buckets: [String: RateLimiter] = [:]

    /// Takes one message for `id` at monotonic `now`; the wait for `Retry-After` when over the rate.
    mutating func take(_ id: String, rate: Double, burst: Double, now: Duration) -> Duration? {
        if buckets[id] == nil, buckets.count >= Self.maxEntries { buckets.removeAll(keepingCapacity: true) }
        var bucket = buckets[id] ?? RateLimiter(rate: rate, burst: burst)
        let wait = bucket.take(1, now: now)
        buckets[id] = bucket
        return wait
    }
}

extension GatewayCore {
    /// Queues a WebPush message; `reply` gets the answer after COMMIT (503 + `Retry-After` when the queue is full
    /// or the store unreachable, 500 when the store failed: never a 4xx for trouble of ours).
    func submitWebPush(_ submission: WebPushSubmission, reply: @escaping @Sendable (WebPushReply) -> Void) {
        let job = Job(
            run: { context in
                let answer = try context.ingestWebPush(submission)
                context.effects.append { reply(answer) }
            },
            fail: { error in
                reply(
                    .error(
                        error.isUnavailable ? 503 : 500, "unavailable", "the push service could not store the message",
                        headers: [("retry-after", "5")]))
            })
        if !submit(job) {
            reply(
                .error(
                    503, "unavailable", "the push service is overloaded; retry later", headers: [("retry-after", "5")]))
        }
    }

    /// Queues a Matrix push gateway notification for `pushkeys` (endpoint ids, `nil` for a pushkey that is not this
    /// gateway's); `reply` gets the pushkeys rejected.
    func submitMatrix(
        _ body: [UInt8], pushkeys: [(pushkey: String, id: String?)], urgency: WebPushUrgency, receivedAt: Int64,
        reply: @escaping @Sendable (WebPushReply) -> Void
    ) {
        let job = Job(
            run: { context in
                var rejected: [String] = []
                for (pushkey, id) in pushkeys {
                    guard let id else {
                        rejected.append(pushkey)
                        continue
                    }
                    let submission = WebPushSubmission(
                        subscriptionID: id, ttl: WebPushHandler.matrixTTLSeconds, urgency: urgency, topic: nil,
                        vapid: nil, authorizationSent: false, body: body, receivedAt: receivedAt)
                    if try context.ingestWebPush(submission).status != 201 { rejected.append(pushkey) }
                }
                let outcome = rejected.isEmpty ? "stored" : "matrix-rejected"
                let json: String = "{\"rejected\":[" + rejected.map(JSONText.quoted).joined(separator: ",") + "]}"
                context.effects.append {
                    reply(
                        WebPushReply(
                            status: 200, headers: [("content-type", "application/json")], body: json,
                            outcome: outcome))
                }
            },
            fail: { error in
                reply(.error(error.isUnavailable ? 503 : 500, "unavailable", "the push gateway could not store it"))
            })
        if !submit(job) { reply(.error(503, "unavailable", "the push gateway is overloaded; retry later")) }
    }
}

extension CoreContext {
    // MARK: Ingest

    /// Looks the subscription up, checks VAPID and the rate, then stores and delivers the message as a push.
    mutating func ingestWebPush(_ submission: WebPushSubmission) throws -> WebPushReply {
        guard let webPush = core.webPush else { return .error(404, "unknown-subscription", "no such push resource") }
        guard let subscription = try transaction.webPushSubscription(submission.subscriptionID) else {
            return .error(404, "unknown-subscription", "no such push resource")
        }
        if subscription.revokedAt != nil {
            return .error(410, "unregistered", "the subscription was removed by its device")
        }
        if let key = subscription.vapidKey {
            guard let vapid = submission.vapid else {
                if submission.authorizationSent {
                    return .error(403, "vapid-invalid", "Authorization is not 'vapid t=<JWT>, k=<key>' (RFC 8292)")
                }
                return .error(
                    401, "vapid-missing", "this subscription requires VAPID (RFC 8292): Authorization: vapid t=…, k=…",
                    headers: [("www-authenticate", "vapid")])
            }
            if let problem = vapid.problem(subscriptionKey: key, audience: webPush.normalizedOrigin, now: now / 1000) {
                return .error(403, "vapid-invalid", "VAPID: \(problem)")
            }
        }
        // The batch's wall clock (a step back only refills nothing: the bucket ignores negative time).
        if let wait = core.webPushRates.withLock({
            $0.take(subscription.id, rate: webPush.messagesPerSecond, burst: webPush.burst, now: .milliseconds(now))
        }) {
            let metrics = core.metrics
            effects.append { metrics.limitHit(listener: "webpush", limit: "webpush-rate") }
            let seconds = max(1, (wait.components.seconds) + (wait.components.attoseconds > 0 ? 1 : 0))
            return .error(
                429, "rate-limited", "more than \(webPush.burst) messages at once for this subscription",
                headers: [("retry-after", "\(seconds)")])
        }
        let applied = min(submission.ttl, core.limits.maxExpirationSeconds)
        let messageID = APNsID.random()
        let push = StoredPush(
            id: 0, deviceID: subscription.deviceID, token: subscription.id, topic: subscription.id,
            pushType: WebPushSubscriptionRecord.pushType, priority: submission.urgency.rank, apnsID: messageID,
            collapseID: submission.topic, expiration: applied == 0 ? 0 : now / 1000 + applied,
            expiresAt: applied == 0 ? now : now &+ applied &* 1000, receivedAt: submission.receivedAt,
            payload: submission.body)
        let outcome = try place(push, offlineReason: applied == 0 ? "expiration-zero-offline" : nil)
        return WebPushReply(
            status: 201,
            headers: [("location", "\(webPush.normalizedOrigin)/m/\(messageID)"), ("ttl", "\(applied)")],
            outcome: outcome)
    }

    // MARK: Device requests

    /// `POST /device/v1/webpush`: a new endpoint for an app's registration (the existing one when the device already
    /// has it with the same VAPID key; a new one, the old removed, when the key changed).
    mutating func createWebPushSubscription(device: DeviceRecord, _ request: WebPushSubscriptionRequest) throws
        -> DeviceReply
    {
        guard let webPush = core.webPush else {
            return .error(404, "notFound", "this gateway has no WebPush listener (configuration webpush)")
        }
        let live = try transaction.webPushSubscriptions(deviceID: device.id)
        if let existing = live.first(where: { $0.app == request.app && $0.token == request.token }) {
            if existing.vapidKey == request.vapid { return .ok(Self.model(existing, webPush.normalizedOrigin)) }
            _ = try dropWebPushSubscription(device: device, id: existing.id)
        }
        let metrics = core.metrics
        let current = live.filter { !($0.app == request.app && $0.token == request.token) }
        guard current.count < webPush.maxSubscriptionsPerDevice else {
            effects.append { metrics.limitHit(listener: "device", limit: "webpush-subscriptions-device") }
            return .error(
                429, "tooManySubscriptions", "at most \(webPush.maxSubscriptionsPerDevice) subscriptions per device")
        }
        guard current.filter({ $0.app == request.app }).count < webPush.maxSubscriptionsPerApp else {
            effects.append { metrics.limitHit(listener: "device", limit: "webpush-subscriptions-app") }
            return .error(
                429, "tooManySubscriptions", "at most \(webPush.maxSubscriptionsPerApp) subscriptions per app")
        }
        let record = WebPushSubscriptionRecord(
            id: Base64URL.encode(DeviceAPI.randomBytes(32)), deviceID: device.id, app: request.app,
            token: request.token, vapidKey: request.vapid, createdAt: now, revokedAt: nil)
        try transaction.insertWebPushSubscription(record)
        return .created(Self.model(record, webPush.normalizedOrigin))
    }

    /// `GET /device/v1/webpush`.
    func listWebPushSubscriptions(device: DeviceRecord) throws -> DeviceReply {
        let origin = core.webPush?.normalizedOrigin ?? ""
        let list = WebPushSubscriptionList(
            subscriptions: try transaction.webPushSubscriptions(deviceID: device.id).map { Self.model($0, origin) })
        return .ok(list)
    }

    /// `DELETE /device/v1/webpush/<id>`: senders get 410 from then on; pending messages are dropped.
    mutating func dropWebPushSubscription(device: DeviceRecord, id: String) throws -> DeviceReply {
        guard let dropped = try transaction.revokeWebPushSubscription(id, deviceID: device.id, at: now) else {
            return .error(404, "unknownSubscription", "this device has no live subscription '\(id)'")
        }
        if var slot = state.channels[device.id], !dropped.isEmpty {
            if case .refill(let limit) = slot.delivery.removed(dropped) { try refill(&slot, limit: limit) }
            state.channels[device.id] = slot
        }
        return .ok(DeviceRevocation(.id, id, revokedAt: now))
    }

    /// `POST /device/v1/urgency`: the channel's minimum urgency; a lower one sends what was withheld.
    mutating func setMinimumUrgency(device: DeviceRecord, _ urgency: WebPushUrgency) throws -> DeviceReply {
        guard var slot = state.channels[device.id] else {
            return .error(409, "noChannel", "the device has no open channel here: send urgency with the channel")
        }
        let lower = urgency.rank < slot.minimumUrgency
        slot.minimumUrgency = urgency.rank
        if lower, slot.webPush, case .refill(let limit) = slot.delivery.storedElsewhere(seq: nil) {
            try refill(&slot, limit: limit)
        }
        state.channels[device.id] = slot
        return .ok(WebPushUrgencyRequest(urgency: urgency))
    }

    private static func model(_ record: WebPushSubscriptionRecord, _ origin: String) -> WebPushSubscription {
        WebPushSubscription(
            id: record.id, endpoint: "\(origin)/wp/\(record.id)", app: record.app, token: record.token,
            vapid: record.vapidKey, createdAt: record.createdAt)
    }
}
