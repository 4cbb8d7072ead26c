import Foundation

/// One NDJSON record of the device channel, parsed leniently (unknown types are kept as `.other`).
enum ChannelRecord: Sendable, Equatable {
    case hello(heartbeat: Int)
    case push(AgentPush)
    case heartbeat
    case replaced
    case shutdown
    case revoked
    case other(String)

    /// Parses one line; nil for a line that is not a JSON object with a `type`.
    static func parse(_ line: [UInt8]) -> ChannelRecord? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any],
            let type = object["type"] as? String
        else { return nil }
        func int64(_ key: String) -> Int64 { (object[key] as? NSNumber)?.int64Value ?? 0 }
        switch type {
        case "hello": return .hello(heartbeat: Int(int64("heartbeat")))
        case "heartbeat": return .heartbeat
        case "replaced": return .replaced
        case "shutdown": return .shutdown
        case "revoked": return .revoked
        case "push":
            guard let id = object["id"] as? String, let topic = object["topic"] as? String else { return nil }
            return .push(
                AgentPush(
                    id: id, pushType: object["pushType"] as? String ?? "alert", topic: topic,
                    payload: object["payload"] as? String ?? "", apnsID: object["apnsID"] as? String ?? id,
                    expiration: int64("expiration"), receivedAt: int64("receivedAt")))
        default: return .other(type)
        }
    }
}

/// Splits a byte stream into lines.
struct LineSplitter: Sendable {
    private var buffer: [UInt8] = []
    /// Longest line accepted (a push record with a 5 KiB payload is far below).
    let maxLine = 1 << 20

    mutating func append(_ bytes: [UInt8]) -> [[UInt8]] {
        buffer += bytes
        var lines: [[UInt8]] = []
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(Array(buffer[..<newline]))
            buffer.removeSubrange(...newline)
        }
        if buffer.count > maxLine { buffer.removeAll() }
        return lines
    }
}
