import RouseWire

/// The agent's IPC as the agent reads it from a handler or admin tool: `FrameDecoder<AgentRequest>` (4-byte length,
/// JSON body, version) over the byte stream, and `FrameDecoder<AgentEvent>` (what handlers read) over the same
/// bytes. Every frame read must survive `FrameCodec.encode` unchanged.
enum IPCFrameFuzz {
    static let target = FuzzTarget(
        name: "ipc-frame",
        summary: "FrameDecoder<AgentRequest> and <AgentEvent> (the agent IPC's frames), with a round trip",
        run: run)

    static func run(_ bytes: [UInt8]) {
        decodeAll(AgentRequest.self, bytes)
        decodeAll(AgentEvent.self, bytes)
    }

    private static func decodeAll<Message: IPCMessage>(_: Message.Type, _ bytes: [UInt8]) {
        var decoder = FrameDecoder<Message>()
        decoder.append(bytes)
        // At most as many frames as there are 5-byte minimal frames in the input; a thrown error ends the stream,
        // as it ends the connection.
        for _ in 0...(bytes.count / 5) {
            guard let frame = try? decoder.next() else { return }
            var check = FrameDecoder<Message>()
            check.append(FrameCodec.encode(frame))
            guard let again = try? check.next(), again == frame else {
                fatalError("ipc-frame: \(frame) does not survive FrameCodec.encode")
            }
        }
    }
}
