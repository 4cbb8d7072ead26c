import Foundation
import RouseAPNs

/// The records the gateway writes on a device channel: one JSON object per line (`\n`-terminated, UTF-8,
/// no newline inside a record). See docs/gateway.md for the protocol.
public enum ChannelFrame {
    /// First record of every channel.
    public static func hello(deviceID: String, channelID: UInt64, heartbeatSeconds: Int, window: Int) -> [UInt8] {
        line(
            "{\"type\":\"hello\",\"device\":\(JSONText.quoted(deviceID)),\"channel\":\(channelID),"
                + "\"heartbeat\":\(heartbeatSeconds),\"window\":\(window)}")
    }

    /// One push.
    public static func push(_ push: StoredPush) -> [UInt8] {
        var text = "{\"type\":\"push\",\"id\":\"\(push.id)\",\"token\":\(JSONText.quoted(push.token))"
        text += ",\"topic\":\(JSONText.quoted(push.topic))"
        if let pushType = push.pushType { text += ",\"pushType\":\(JSONText.quoted(pushType))" }
        text += ",\"priority\":\(push.priority),\"apnsID\":\(JSONText.quoted(push.apnsID))"
        if let collapseID = push.collapseID { text += ",\"collapseID\":\(JSONText.quoted(collapseID))" }
        text += ",\"expiration\":\(push.expiration == 0 ? 0 : push.expiresAt / 1000)"
        text += ",\"receivedAt\":\(push.receivedAt)"
        text += ",\"payload\":\"\(Data(push.payload).base64EncodedString())\"}"
        return line(text)
    }

    /// Liveness record for clients that cannot send HTTP/2 PINGs.
    public static func heartbeat(time: Int64) -> [UInt8] { line("{\"type\":\"heartbeat\",\"time\":\(time)}") }

    /// Last record of a channel that a newer one replaced.
    public static let replaced = line("{\"type\":\"replaced\"}")

    /// Last record of a channel whose device was revoked.
    public static let revoked = line("{\"type\":\"revoked\"}")

    /// Last record of a channel closed because the gateway stops.
    public static let shutdown = line("{\"type\":\"shutdown\"}")

    private static func line(_ text: String) -> [UInt8] {
        var bytes = Array(text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
