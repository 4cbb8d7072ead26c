import RouseAPNs
import RouseHTTP2

/// A push that passed the provider-side rules, on its way to the store thread.
struct PushSubmission: Sendable {
    /// Lowercase hex.
    var token: String
    var headers: APNsNotificationHeaders
    var payload: [UInt8]
    var apnsID: String
    var receivedAt: Int64
}

extension GatewayCore {
    /// Queues a validated push; the answer goes to `stream` after the store decided (and committed).
    func submitPush(_ submission: PushSubmission, stream: HTTP2Stream) {
        let metrics = self.metrics
        let type = submission.headers.pushType?.rawValue
        let apnsID = submission.apnsID
        let job = Job(
            run: { context in try context.ingest(submission, stream: stream) },
            fail: { error in
                // The store unreachable (PostgreSQL down): 503, retry later; any other failure: 500. Never 200.
                let reason: APNsReason = error.isUnavailable ? .serviceUnavailable : .internalServerError
                metrics.pushIn(type: type, outcome: reason.rawValue)
                ProviderResponse.reject(stream, reason: reason, apnsID: apnsID)
            })
        if !submit(job) {
            metrics.pushIn(type: type, outcome: APNsReason.serviceUnavailable.rawValue)
            ProviderResponse.reject(stream, reason: .serviceUnavailable, apnsID: apnsID)
        }
    }
}

extension CoreContext {
    /// Step 7 of the provider flow and the delivery semantics, inside the batch's transaction.
    mutating func ingest(_ submission: PushSubmission, stream: HTTP2Stream) throws {
        let metrics = core.metrics
        let type = submission.headers.pushType?.rawValue
        let apnsID = submission.apnsID
        func reject(_ reason: APNsReason, timestamp: Int64? = nil) {
            effects.append {
                metrics.pushIn(type: type, outcome: reason.rawValue)
                ProviderResponse.reject(stream, reason: reason, apnsID: apnsID, timestamp: timestamp)
            }
        }
        func accept(_ outcome: String) {
            effects.append {
                metrics.pushIn(type: type, outcome: outcome)
                stream.respond(status: 200, headers: [HTTP2Header("apns-id", apnsID)])
            }
        }

        // "The specified device token is invalid" / "…inactive for the specified topic" [RESP].
        guard let token = try transaction.token(submission.token) else { return reject(.badDeviceToken) }
        if let revokedAt = token.revokedAt { return reject(.unregistered, timestamp: revokedAt) }
        guard token.topic == submission.headers.topic else { return reject(.deviceTokenNotForTopic) }

        let limits = core.limits
        let maxMilliseconds = limits.maxExpirationSeconds &* 1000
        var expiresAt: Int64
        // Tried once at once on an open channel, never stored for later: `apns-expiration: 0`, or an expiration
        // already past. APNs reads a non-zero expiration as "store until then" and delivers at once to a connected
        // device whatever its value; aioapns sends the current second for `time_to_live=0`, which has passed by the
        // time it arrives. Such a push was answered 200 and dropped untried before.
        let offlineReason: String?
        switch submission.headers.expiration {
        case .none:
            expiresAt = now &+ min(limits.defaultExpirationSeconds, limits.maxExpirationSeconds) &* 1000
            offlineReason = nil
        case .some(0):
            expiresAt = now
            offlineReason = "expiration-zero-offline"
        case .some(let seconds):
            let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
            expiresAt = overflow ? Int64.max : milliseconds
            expiresAt = min(expiresAt, now &+ maxMilliseconds)
            offlineReason = expiresAt <= now ? "expired-offline" : nil
        }
        let push = StoredPush(
            id: 0, deviceID: token.deviceID, token: token.token, topic: token.topic, pushType: type,
            priority: submission.headers.priority.rawValue, apnsID: apnsID,
            collapseID: submission.headers.collapseID, expiration: submission.headers.expiration,
            expiresAt: expiresAt, receivedAt: submission.receivedAt, payload: submission.payload)
        accept(try place(push, offlineReason: offlineReason))
    }

    /// Stores `push` (or, with an `offlineReason`, tries it once on an open channel) and sends it on the device's
    /// channel when it may go out now; returns the outcome for `pushes_in_total`. Shared by the provider API and
    /// WebPush ingest. A WebPush message goes out only on a channel that declared the feature, at or above its
    /// minimum urgency (`ChannelSlot.accepts`); otherwise it stays stored (withheld) until a refill finds it.
    mutating func place(_ push: StoredPush, offlineReason: String?) throws -> String {
        var push = push
        let metrics = core.metrics
        let limits = core.limits
        let type = push.pushType
        var slot = state.channels[push.deviceID]
        let deliverable = slot?.accepts(push) ?? false

        if let offlineReason, let online = slot {
            guard deliverable else {
                // Withheld from this channel (urgency below its minimum): "deliver now or drop" drops it.
                effects.append { metrics.dropped(type: type, reason: offlineReason) }
                return "dropped-offline"
            }
            // "attempts to deliver the notification only once and doesn't store it" [SEND].
            return sendEphemeral(push, on: online, offlineReason: offlineReason)
        }
        // Several nodes: the device's row stays locked until COMMIT, so its pushes commit in sequence order, and
        // the node holding its channel is known.
        let sequence = try transaction.nextDeviceSequence(deviceID: push.deviceID)
        var elsewhere: ChannelOwner?
        if let sequence {
            push.deviceSeq = sequence.seq
            if let online = slot, sequence.owner != ChannelOwner(node: core.node, channelID: online.delivery.channelID)
            {
                // A newer channel took the device on another node (its message may still be on its way).
                endChannel(deviceID: push.deviceID, frame: ChannelFrame.replaced)
                slot = nil
            }
            if slot == nil { elsewhere = sequence.owner }
        }
        if let offlineReason {
            guard elsewhere != nil else {
                effects.append { metrics.dropped(type: type, reason: offlineReason) }
                return "dropped-offline"
            }
            // The channel is on another node: stored for a moment only, and that node sends it now.
            push.expiresAt = now &+ Self.relayMilliseconds
        } else if elsewhere != nil {
            // An expiration that passes while the push travels to the node holding the channel (the commit, the
            // message, that node's read) must not drop it there untried: it has the relay's moment at least.
            push.expiresAt = max(push.expiresAt, now &+ Self.relayMilliseconds)
        }

        var replaced: [Int64] = []
        if let collapseID = push.collapseID {
            replaced = try transaction.deletePending(deviceID: push.deviceID, topic: push.topic, collapseID: collapseID)
            if !replaced.isEmpty {
                let count = replaced.count
                effects.append { metrics.dropped(type: type, reason: "collapsed", count: count) }
            }
        }
        if push.isBackground, slot == nil, elsewhere == nil {
            // APNs keeps one notification per app for an offline device; we keep the newest background push
            // per topic.
            let older = try transaction.deletePendingBackground(deviceID: push.deviceID, topic: push.topic)
            if !older.isEmpty {
                let count = older.count
                effects.append { metrics.dropped(type: type, reason: "background-slot", count: count) }
            }
        }
        // Storage quotas: the token's, then the device's oldest pending pushes make room for this one.
        for (owner, pushes, bytes, reason) in [
            (
                BacklogOwner.token(push.token), limits.maxPendingPushesPerToken, limits.maxPendingBytesPerToken,
                "token-quota"
            ),
            (.device(push.deviceID), limits.maxPendingPushesPerDevice, limits.maxPendingBytesPerDevice, "device-quota"),
        ] {
            let dropped = try transaction.trimBacklog(owner, pushes: pushes - 1, bytes: bytes - push.payload.count)
            guard !dropped.isEmpty else { continue }
            replaced += dropped.map(\.id)
            let types = dropped.map(\.pushType)
            effects.append { for type in types { metrics.dropped(type: type, reason: reason) } }
        }
        if var online = slot, !replaced.isEmpty {
            if case .refill(let limit) = online.delivery.removed(replaced) {
                try refill(&online, limit: limit)
            }
            slot = online
        }
        push.id = try transaction.insertPush(push)
        if var online = slot {
            if deliverable {
                switch online.delivery.offer(id: push.id, isVoIP: push.isVoIP, seq: push.deviceSeq) {
                case .send: send(push, on: online.stream)
                case .refill(let limit): try refill(&online, limit: limit)
                case .none: break
                }
            }
            state.channels[push.deviceID] = online
        } else if let elsewhere, let seq = push.deviceSeq {
            tell(elsewhere.node, .pending(deviceID: push.deviceID, seq: seq))
        }
        return "stored"
    }

    /// How long an `apns-expiration: 0` push is kept for the node holding the device's channel, when another node
    /// received it (the time to commit, wake that node and send).
    static let relayMilliseconds: Int64 = 5000

    /// Sends an `apns-expiration: 0` (or already expired) push on a channel held here, if its window has room;
    /// returns the outcome.
    private mutating func sendEphemeral(_ push: StoredPush, on online: ChannelSlot, offlineReason: String) -> String {
        var online = online
        var push = push
        let type = push.pushType
        guard online.delivery.canSendEphemeral(isVoIP: push.isVoIP) else {
            let metrics = core.metrics
            effects.append { metrics.dropped(type: type, reason: offlineReason) }
            return "dropped-offline"
        }
        push.id = state.nextEphemeralID
        state.nextEphemeralID += 1
        online.delivery.sentEphemeral(id: push.id)
        state.channels[push.deviceID] = online
        send(push, on: online.stream)
        return "delivered-now"
    }

    /// Queues a message to another node, sent when the batch commits.
    mutating func tell(_ node: String, _ message: NodeMessage) {
        outbox[node, default: []].append(message)
    }

    /// Loads up to `limit` pending pushes for the slot's device and queues them on its channel, in order.
    mutating func refill(_ slot: inout ChannelSlot, limit: Int) throws {
        let pushes = try transaction.pending(
            deviceID: slot.deviceID, excluding: slot.delivery.inFlight, limit: limit, now: now,
            webPushMinimum: slot.webPushMinimum)
        slot.delivery.refilled(ids: pushes.map(\.id), limit: limit)
        for push in pushes { send(push, on: slot.stream) }
    }

    /// Queues a channel write of `push` (after COMMIT).
    mutating func send(_ push: StoredPush, on stream: HTTP2Stream) {
        let metrics = core.metrics
        let frame = push.isWebPush ? ChannelFrame.webPush(push) : ChannelFrame.push(push)
        let type = push.pushType
        let latency = now - push.receivedAt
        effects.append {
            stream.write(frame)
            metrics.pushOut(type: type, latencyMilliseconds: latency)
        }
    }
}

/// APNs-style responses on the provider API.
enum ProviderResponse {
    /// An error: `apns-id`, `content-type: application/json`, `{"reason":…}` (+ `timestamp` for 410).
    static func reject(_ stream: HTTP2Stream, reason: APNsReason, apnsID: String?, timestamp: Int64? = nil) {
        stream.respond(
            status: reason.status ?? 400,
            headers: [
                HTTP2Header("apns-id", apnsID ?? APNsID.random()),
                HTTP2Header("content-type", "application/json"),
            ],
            body: JSONText.errorBody(reason: reason, timestamp: timestamp))
    }
}
