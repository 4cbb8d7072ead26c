import Foundation
import RouseActivation
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
    private let requests = PendingRequests()

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
                Connection(socket: ClientSocket.inherit(fd), reconnectPath: environment["ROUSE_AGENT_SOCKET"]))
        } else {
            connection = Mutex(
                Connection(
                    socket: try ClientSocket.connect(
                        path: socketPath ?? environment["ROUSE_AGENT_SOCKET"] ?? Self.defaultSocketPath)))
        }
        (messages, continuation) = AsyncStream.makeStream(of: AgentMessage.self)
        let thread = Thread { [self] in
            defer {
                continuation.finish()
                for waiter in requests.close() { waiter.resume(throwing: Self.connectionClosed) }
            }
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
                            // An answer to an awaited request goes to its caller; everything else to `messages`.
                            if let id = message.requestID, let waiter = requests.take(id) {
                                refused = false
                                waiter.resume(returning: message)
                                continue
                            }
                            // The agent said why it closes (not authorized, unknown handler…): not a restart.
                            // Only an error that is the last frame before the close counts: an earlier one
                            // (taskInvalid, badRequest…) answered a single request.
                            refused = message.kind == .error
                            continuation.yield(message)
                        }
                    } catch {
                        return
                    }
                }
                // Requests sent on the lost connection are never answered: they fail now.
                for waiter in requests.failPending() { waiter.resume(throwing: Self.connectionClosed) }
                if refused { return }
                if received || deadline == nil { deadline = ContinuousClock.now + Self.reconnectWindow }
                guard let limit = deadline, let next = reconnect(until: limit) else { return }
                socket = next
            }
        }
        thread.name = "rouse-agent-client"
        thread.start()
    }

    private static let connectionClosed = AgentRequestError(
        code: "connectionClosed", detail: "the connection to the agent closed before the answer")

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

    /// Sends `message` with a fresh `requestID` and waits for the answer carrying it. An `error` answer
    /// throws ``AgentRequestError``, as does the connection closing first.
    public func request(_ message: AgentMessage) async throws -> AgentMessage {
        var message = message
        let answer: AgentMessage = try await withCheckedThrowingContinuation { waiter in
            guard let id = requests.register(waiter) else {
                waiter.resume(throwing: AgentRequestError(code: "connectionClosed", detail: "the connection is closed"))
                return
            }
            message.requestID = id
            do {
                try send(message)
            } catch {
                requests.take(id)?.resume(throwing: error)
            }
        }
        if answer.kind == .error {
            throw AgentRequestError(code: answer.error ?? "error", detail: answer.detail ?? "")
        }
        return answer
    }

    /// Reports a call (the CallKit `reportNewIncomingCall` moment for `pushID`, or an outgoing call with no
    /// push). The agent activates the handler's `call` session with `configuration` (default
    /// `playAndRecord` + `voiceChat`) and sends `activation` `callActivated` (or `delayed`).
    public func reportCall(pushID: String?, callID: String, configuration: SessionConfiguration? = nil) throws {
        var message = AgentMessage(type: .reportCall)
        message.pushID = pushID
        message.callID = callID
        if let configuration { message.setConfiguration(configuration) }
        try send(message)
    }

    /// The call ended. When it was the handler's last call, its call session ends; `notifyOthers` lets the
    /// sessions it interrupted resume (`interruptionEnded(shouldResume: true)`).
    public func callEnded(callID: String, notifyOthers: Bool = true) throws {
        var message = AgentMessage(type: .callEnded)
        message.callID = callID
        message.notifyOthers = notifyOthers
        try send(message)
    }

    /// Activates audio session `session` (AVAudioSession `setActive(true)`): `granted`, `denied(reason)` or
    /// `delayed` (a `granted` follows in `messages` when the blocking call ends). Later events for the
    /// session (interruptions, ducks, route changes) arrive in ``messages`` as `activation` messages.
    public func activate(
        session: String, configuration: SessionConfiguration, role: ActivationPriority = .media,
        acceptsDelay: Bool = false
    ) async throws -> ActivationMessage {
        let answer = try await request(
            AgentMessage(activate: session, configuration: configuration, role: role, acceptsDelay: acceptsDelay))
        guard let event = answer.activationEvent else {
            throw AgentRequestError(code: "badAnswer", detail: "activate answered with \(answer.type)")
        }
        return event
    }

    /// Deactivates `session` (`setActive(false)`); with `notifyOthers` the sessions it interrupted may resume
    /// (`.notifyOthersOnDeactivation`), without they end.
    public func deactivate(session: String, notifyOthers: Bool = false) async throws {
        var message = AgentMessage(type: .deactivate)
        message.session = session
        message.notifyOthers = notifyOthers
        _ = try await request(message)
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

/// Requests waiting for their answer, matched by `requestID`; closed (every waiter failed) when the
/// connection ends.
final class PendingRequests: Sendable {
    typealias Waiter = CheckedContinuation<AgentMessage, any Error>
    private struct State {
        var next = 1
        var waiting: [Int: Waiter] = [:]
        var closed = false
    }
    private let state = Mutex(State())

    /// A fresh request id for `waiter`; nil once closed.
    func register(_ waiter: Waiter) -> Int? {
        state.withLock { state in
            guard !state.closed else { return nil }
            let id = state.next
            state.next += 1
            state.waiting[id] = waiter
            return id
        }
    }

    /// The waiter for `id`, removed.
    func take(_ id: Int) -> Waiter? { state.withLock { $0.waiting.removeValue(forKey: id) } }

    /// Every waiter still waiting, removed (their connection was lost; the table stays open).
    func failPending() -> [Waiter] {
        state.withLock { state in
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
    }

    /// Closes: every waiter still waiting, removed.
    func close() -> [Waiter] {
        state.withLock { state in
            state.closed = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
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
