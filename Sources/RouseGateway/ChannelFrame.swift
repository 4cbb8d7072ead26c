import FoundationEssentials
import RouseWire

/// The records the gateway writes on a device channel, as bytes: ``ChannelRecord`` (the model the agent reads
/// too) from the gateway's own values, written by its fast writer (docs/gateway.md has the protocol).
enum ChannelFrame {
    /// First record of every channel.
    static func hello(deviceID: String, channelID: UInt64, heartbeatSeconds: Int, window: Int) -> [UInt8] {
        ChannelRecord.hello(.init(device: deviceID, channel: channelID, heartbeat: heartbeatSeconds, window: window))
            .line
    }

    /// One push.
    static func push(_ push: StoredPush) -> [UInt8] { ChannelRecord.push(ChannelRecord.Push(push)).line }

    /// One WebPush message (channels that declared the feature only).
    static func webPush(_ push: StoredPush) -> [UInt8] {
        var bytes = Array(ChannelRecord.WebPush(push).text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Liveness record for clients that cannot send HTTP/2 PINGs.
    static func heartbeat(time: Int64) -> [UInt8] { ChannelRecord.heartbeat(.init(time: time)).line }

    /// Last record of a channel that a newer one replaced.
    static let replaced = ChannelRecord.replaced.line

    /// Last record of a channel whose device was revoked.
    static let revoked = ChannelRecord.revoked.line

    /// Last record of a channel closed because the gateway stops.
    static let shutdown = ChannelRecord.shutdown.line
}

extension ChannelRecord.Push {
    /// A stored push as the device sees it: `expiration` is when the gateway stops offering it (UNIX seconds,
    /// 0 = deliver now or drop), the payload base64.
    init(_ push: StoredPush) {
        self.init(
            id: String(push.id), token: push.token, topic: push.topic, pushType: push.pushType,
            priority: push.priority, apnsID: push.apnsID, collapseID: push.collapseID,
            expiration: push.expiration == 0 ? 0 : push.expiresAt / 1000, receivedAt: push.receivedAt,
            payload: Data(push.payload).base64EncodedString())
    }
}

extension ChannelRecord.WebPush {
    /// A stored WebPush message as the device sees it (see `WebPushSubscriptionRecord` for the columns used).
    init(_ push: StoredPush) {
        self.init(
            id: String(push.id), subscription: push.token, urgency: WebPushUrgency(rank: push.priority) ?? .normal,
            topic: push.collapseID, expiration: push.expiration == 0 ? 0 : push.expiresAt / 1000,
            receivedAt: push.receivedAt, payload: Data(push.payload).base64EncodedString())
    }
}
