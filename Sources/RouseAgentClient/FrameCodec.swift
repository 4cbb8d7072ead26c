import Foundation

/// Framing of the IPC protocol: each message is a 4-byte big-endian length followed by that many bytes of
/// UTF-8 JSON (one ``AgentMessage`` object). Frames are at most ``maxFrameBytes``.
public enum FrameCodec {
    /// Largest frame body accepted (64 KiB).
    public static let maxFrameBytes = 64 * 1024

    /// The bytes of one frame for `message`.
    public static func encode(_ message: AgentMessage) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(message)).map { Array($0) } ?? Array(#"{"v":1,"type":"error"}"#.utf8)
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
            + body
    }
}

/// Why bytes from a peer are not a valid frame.
public struct FrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Short code sent back in the `error` frame.
    public let code: String
    /// What was wrong.
    public let detail: String

    /// The declared length exceeds ``FrameCodec/maxFrameBytes`` (or is zero).
    public static func badLength(_ length: Int) -> FrameError {
        FrameError(code: "malformedFrame", detail: "frame length \(length) not in 1...\(FrameCodec.maxFrameBytes)")
    }
    /// The body is not a JSON object with `v` and `type`.
    public static func badJSON(_ detail: String) -> FrameError {
        FrameError(code: "malformedFrame", detail: "frame body is not a protocol message: \(detail)")
    }
    /// The version is not one this side speaks.
    public static func badVersion(_ version: Int) -> FrameError {
        FrameError(
            code: "unsupportedVersion", detail: "protocol version \(version) (supported: \(AgentMessage.version))")
    }

    public var description: String { "\(code): \(detail)" }
}

/// Incremental frame decoder (a value): feed bytes as they arrive, take complete messages out.
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []

    /// An empty decoder.
    public init() {}

    /// Appends bytes read from the peer.
    public mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// The next complete message, nil when more bytes are needed; throws on a malformed frame (the
    /// connection should then be closed after an `error` frame).
    public mutating func next() throws(FrameError) -> AgentMessage? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard length > 0, length <= FrameCodec.maxFrameBytes else { throw .badLength(length) }
        guard buffer.count >= 4 + length else { return nil }
        let body = Data(buffer[4..<(4 + length)])
        buffer.removeFirst(4 + length)
        let message: AgentMessage
        do {
            message = try JSONDecoder().decode(AgentMessage.self, from: body)
        } catch {
            throw .badJSON(String(describing: error).prefix(200).description)
        }
        guard message.v == AgentMessage.version else { throw .badVersion(message.v) }
        return message
    }
}
