import Foundation

/// The handler side of the agent's IPC: a program registered as a handler connects, registers, then
/// receives pushes and lifecycle events and answers them (report a call, complete a background push,
/// begin/end background tasks). Launched by the agent, it finds its connection in `ROUSE_AGENT_FD`;
/// started otherwise, it connects to `ROUSE_AGENT_SOCKET` (default `/run/rouse/agent.sock`).
public final class AgentClient: Sendable {
    /// Default socket path of the agent.
    public static let defaultSocketPath = "/run/rouse/agent.sock"

    private let socket: ClientSocket
    /// Messages from the agent, in order; finishes when the connection closes.
    public let messages: AsyncStream<AgentMessage>
    private let continuation: AsyncStream<AgentMessage>.Continuation

    /// Connects: to the inherited fd in `ROUSE_AGENT_FD` when set (launched by the agent), else to
    /// `socketPath` (or `ROUSE_AGENT_SOCKET`).
    public init(socketPath: String? = nil) throws {
        let environment = ProcessInfo.processInfo.environment
        if socketPath == nil, let text = environment["ROUSE_AGENT_FD"], let fd = Int32(text), fd >= 0 {
            socket = ClientSocket(adopting: fd)
        } else {
            socket = try ClientSocket.connect(
                path: socketPath ?? environment["ROUSE_AGENT_SOCKET"] ?? Self.defaultSocketPath)
        }
        (messages, continuation) = AsyncStream.makeStream(of: AgentMessage.self)
        let thread = Thread { [socket, continuation] in
            var decoder = FrameDecoder()
            defer { continuation.finish() }
            while true {
                guard let bytes = try? socket.read(), !bytes.isEmpty else { return }
                decoder.append(bytes)
                do {
                    while let message = try decoder.next() { continuation.yield(message) }
                } catch {
                    return
                }
            }
        }
        thread.name = "rouse-agent-client"
        thread.start()
    }

    /// Sends one message.
    public func send(_ message: AgentMessage) throws {
        try socket.write(FrameCodec.encode(message))
    }

    /// Registers as `handler` (the first message).
    public func register(handler: String) throws {
        var message = AgentMessage(type: .register)
        message.handler = handler
        try send(message)
    }

    /// Reports the incoming call for a VoIP push (the CallKit `reportNewIncomingCall` moment).
    public func reportCall(pushID: String, callID: String) throws {
        var message = AgentMessage(type: .reportCall)
        message.pushID = pushID
        message.callID = callID
        try send(message)
    }

    /// The call ended.
    public func callEnded(callID: String) throws {
        var message = AgentMessage(type: .callEnded)
        message.callID = callID
        try send(message)
    }

    /// Completes a background push with `newData`, `noData` or `failed`.
    public func complete(pushID: String, result: BackgroundFetchResult) throws {
        var message = AgentMessage(type: .complete)
        message.pushID = pushID
        message.result = result.rawValue
        try send(message)
    }

    /// Asks for a background task; the agent answers with `taskBegun` carrying the token.
    public func beginTask(name: String) throws {
        var message = AgentMessage(type: .beginTask)
        message.taskName = name
        try send(message)
    }

    /// Ends the background task with token `id`.
    public func endTask(id: Int) throws {
        var message = AgentMessage(type: .endTask)
        message.taskID = id
        try send(message)
    }

    /// Declares the handler's state: `active`/`inactive` (foreground) or `background`.
    public func setState(_ state: String) throws {
        var message = AgentMessage(type: .setState)
        message.state = state
        try send(message)
    }

    /// Closes the connection.
    public func close() {
        socket.shutdownBoth()
    }
}

/// The result of processing a background push (UIBackgroundFetchResult).
public enum BackgroundFetchResult: String, Sendable, CaseIterable {
    /// New data was fetched.
    case newData
    /// Nothing new.
    case noData
    /// Fetching failed.
    case failed
}
