import Foundation
import Synchronization

/// The handler side of the agent's IPC: a program registered as a handler connects, registers, then
/// receives pushes and lifecycle events and answers them (report a call, complete a background push,
/// begin/end background tasks). Launched by the agent, it finds its connection in `ROUSE_AGENT_FD`;
/// started otherwise, it connects to `ROUSE_AGENT_SOCKET` (default `/run/rouse/agent.sock`).
public final class AgentClient: Sendable {
    /// Default socket path of the agent.
    public static let defaultSocketPath = "/run/rouse/agent.sock"
    /// How long a handler whose inherited connection closed (its agent restarted) keeps trying the socket.
    public static let reconnectWindow = Duration.seconds(60)

    private let connection: Mutex<Connection>
    /// Messages from the agent, in order; finishes when the connection closes (and, for a handler launched
    /// by the agent, when reconnecting to a restarted agent failed).
    public let messages: AsyncStream<AgentMessage>
    private let continuation: AsyncStream<AgentMessage>.Continuation

    private struct Connection: Sendable {
        var socket: ClientSocket
        /// Where to reconnect when the inherited fd closes (nil: a socket-path connection ends with its socket).
        var reconnectPath: String?
        /// The `register` sent, sent again on a new connection.
        var registration: AgentMessage?
        var closed = false
    }

    /// Connects: to the inherited fd in `ROUSE_AGENT_FD` when set (launched by the agent), else to
    /// `socketPath` (or `ROUSE_AGENT_SOCKET`). A launched handler whose inherited connection closes (the agent
    /// was restarted and re-attached to it) reconnects to `ROUSE_AGENT_SOCKET` and registers again.
    public init(socketPath: String? = nil) throws {
        let environment = ProcessInfo.processInfo.environment
        if socketPath == nil, let text = environment["ROUSE_AGENT_FD"], let fd = Int32(text), fd >= 0 {
            connection = Mutex(
                Connection(socket: ClientSocket(adopting: fd), reconnectPath: environment["ROUSE_AGENT_SOCKET"]))
        } else {
            connection = Mutex(
                Connection(
                    socket: try ClientSocket.connect(
                        path: socketPath ?? environment["ROUSE_AGENT_SOCKET"] ?? Self.defaultSocketPath)))
        }
        (messages, continuation) = AsyncStream.makeStream(of: AgentMessage.self)
        let thread = Thread { [self] in
            defer { continuation.finish() }
            var socket = connection.withLock { $0.socket }
            // Until when a lost connection is retried: a window from the last connection that carried messages,
            // so that an agent still dying (a connection accepted, then reset) costs a retry, not the handler.
            var deadline: ContinuousClock.Instant?
            while true {
                var decoder = FrameDecoder()
                var received = false
                var refused = false
                readLoop: while true {
                    guard let bytes = try? socket.read(), !bytes.isEmpty else { break readLoop }
                    decoder.append(bytes)
                    do {
                        while let message = try decoder.next() {
                            received = true
                            // The agent said why it closes (not authorized, unknown handler…): not a restart.
                            if message.kind == .error { refused = true }
                            continuation.yield(message)
                        }
                    } catch {
                        return
                    }
                }
                if refused { return }
                if received || deadline == nil { deadline = ContinuousClock.now + Self.reconnectWindow }
                guard let limit = deadline, let next = reconnect(until: limit) else { return }
                socket = next
            }
        }
        thread.name = "rouse-agent-client"
        thread.start()
    }

    /// After the inherited connection closed: connects to the socket until it works or `deadline` passes, then
    /// registers again. Nil when there is nowhere to reconnect (a socket-path client) or the client was closed.
    private func reconnect(until deadline: ContinuousClock.Instant) -> ClientSocket? {
        guard let path = connection.withLock({ $0.closed ? nil : $0.reconnectPath }) else { return nil }
        while ContinuousClock.now < deadline {
            if let socket = try? ClientSocket.connect(path: path) {
                let registration: AgentMessage? = connection.withLock { state in
                    state.socket = socket
                    return state.closed ? nil : state.registration
                }
                if let registration { try? socket.write(FrameCodec.encode(registration)) }
                return socket
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    /// Sends one message.
    public func send(_ message: AgentMessage) throws {
        try connection.withLock { $0.socket }.write(FrameCodec.encode(message))
    }

    /// Registers as `handler` (the first message); `preservesState`: it opts in to state preservation (it
    /// will be asked to preserve and offered its state back at launch).
    public func register(handler: String, preservesState: Bool = false) throws {
        var message = AgentMessage(type: .register)
        message.handler = handler
        message.preserves = preservesState ? true : nil
        connection.withLock { $0.registration = message }
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
        connection.withLock { state in
            state.closed = true
            state.socket.shutdownBoth()
        }
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
