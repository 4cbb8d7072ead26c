import RouseText

/// A message of the agent's IPC protocol: ``AgentRequest`` (to the agent) or ``AgentEvent`` (from it). It
/// encodes its `type` and its members into the frame's one flat JSON object.
package protocol IPCMessage: Codable, Sendable, Equatable {
    /// The `type` member: the message's wire name.
    var type: String { get }
}

/// One IPC frame's JSON object: a message with the members every message may carry, `v` (the protocol
/// version) and `requestID` (set by a request that awaits its answer; the answer echoes it).
package struct IPCFrame<Message: IPCMessage>: Sendable, Equatable, Codable {
    /// `v`: the sender's protocol version.
    package var version: Int
    /// Correlates a request with its answer.
    package var requestID: Int?
    /// The message.
    package var message: Message

    /// A frame of this version's protocol.
    package init(_ message: Message, requestID: Int? = nil) {
        self.version = FrameCodec.version
        self.requestID = requestID
        self.message = message
    }

    private enum CodingKeys: String, CodingKey {
        case version = "v"
        case requestID
    }

    /// Decodes `v`, `requestID` and the message from the same object.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int.self, forKey: .version)
        requestID = try container.decodeIfPresent(Int.self, forKey: .requestID)
        message = try Message(from: decoder)
    }

    /// Encodes `v`, `requestID` and the message into one object.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encodeIfPresent(requestID, forKey: .requestID)
        try message.encode(to: encoder)
    }
}

/// Framing of the IPC protocol: each frame is a 4-byte big-endian length followed by that many bytes of
/// UTF-8 JSON (one ``IPCFrame`` object, members in sorted order). Frames are at most ``maxFrameBytes``.
package enum FrameCodec {
    /// The protocol version this library speaks.
    package static let version = 1
    /// Largest frame body accepted (64 KiB).
    package static let maxFrameBytes = 64 * 1024

    /// The bytes of one frame for `message`.
    package static func encode<Message: IPCMessage>(_ message: Message, requestID: Int? = nil) -> [UInt8] {
        encode(IPCFrame(message, requestID: requestID))
    }

    /// The bytes of one frame.
    package static func encode<Message: IPCMessage>(_ frame: IPCFrame<Message>) -> [UInt8] {
        // Only a non-finite number fails to encode; none is ever sent.
        let body =
            (try? JSONCoding.encode(frame))
            ?? Array(#"{"detail":"message not encodable","error":"internal","type":"error","v":1}"#.utf8)
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
            + body
    }
}

/// Incremental frame decoder (a value): feed bytes as they arrive, take complete frames out.
package struct FrameDecoder<Message: IPCMessage>: Sendable {
    private var buffer: [UInt8] = []

    /// An empty decoder.
    package init() {}

    /// Appends bytes read from the peer.
    package mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// The next complete frame, nil when more bytes are needed; throws on a malformed frame (the
    /// connection should then be closed after an `error` frame).
    package mutating func next() throws(FrameError) -> IPCFrame<Message>? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard length > 0, length <= FrameCodec.maxFrameBytes else { throw .badLength(length) }
        guard buffer.count >= 4 + length else { return nil }
        let body = buffer[4..<(4 + length)]
        defer { buffer.removeFirst(4 + length) }
        let frame: IPCFrame<Message>
        do {
            frame = try JSONCoding.decode(IPCFrame<Message>.self, from: body)
        } catch {
            throw .badJSON(String(describing: error).prefix(200).description)
        }
        guard frame.version == FrameCodec.version else { throw .badVersion(frame.version) }
        return frame
    }
}
