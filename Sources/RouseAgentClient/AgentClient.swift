import RouseActivation
import RouseClock
import RouseSystem
import RouseWire
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

    let connection: Mutex<Connection>
    /// Messages from the agent, in order (answers to ``request(_:)`` go to their caller instead); finishes when
    /// the connection closes (and, for a handler launched by the agent, when reconnecting to a restarted agent
    /// failed).
    public let messages: AsyncStream<AgentEvent>
    private let continuation: AsyncStream<AgentEvent>.Continuation
    let requests = PendingRequests()
    /// Downloaded files handed over with `transferTask` results (see ``takeDownloadedFile(taskID:)``).
    let downloadedFiles = DownloadedFiles()
    /// VoIP sockets handed back after a relaunch (see ``takeReturnedSocket(socketID:)``).
    let returnedSockets = DownloadedFiles()

    struct Connection: Sendable {
        var socket: ClientSocket
        /// Where to reconnect when the inherited fd closes (nil: a socket-path connection ends with its socket).
        var reconnectPath: String?
        /// The `register` sent, sent again on a new connection.
        var registration: AgentRequest?
        var closed = false
    }

    /// Connects: to the inherited fd in `ROUSE_AGENT_FD` when set (launched by the agent), else to
    /// `socketPath` (or `ROUSE_AGENT_SOCKET`). A launched handler whose inherited connection closes (the agent
    /// was restarted and re-attached to it) reconnects to `ROUSE_AGENT_SOCKET` and registers again.
    public init(socketPath: String? = nil) throws {
        if socketPath == nil, let text = Sys.environment("ROUSE_AGENT_FD"), let fd = Int32(text), fd >= 0 {
            connection = Mutex(
                Connection(socket: ClientSocket.inherit(fd), reconnectPath: Sys.environment("ROUSE_AGENT_SOCKET")))
        } else {
            connection = Mutex(
                Connection(
                    socket: try ClientSocket.connect(
                        path: socketPath ?? Sys.environment("ROUSE_AGENT_SOCKET") ?? Self.defaultSocketPath)))
        }
        (messages, continuation) = AsyncStream.makeStream(of: AgentEvent.self)
        try Sys.startThread(name: "rouse-agent-client") { [self] in
            defer {
                continuation.finish()
                for waiter in requests.close() { waiter.resume(throwing: Self.connectionClosed) }
            }
            var socket = connection.withLock { $0.socket }
            // Until when a lost connection is retried: a window from the last connection that carried messages,
            // so that an agent still dying (a connection accepted, then reset) costs a retry, not the handler.
            var deadline: RouseInstant?
            while true {
                var decoder = FrameDecoder<AgentEvent>()
                var received = false
                var refused = false
                // Descriptors (downloaded files) arrive with the first bytes of the frame that names them.
                var descriptors: [Int32] = []
                defer { for fd in descriptors { Sys.close(fd) } }
                readLoop: while true {
                    guard let (bytes, passed) = try? socket.read() else { break readLoop }
                    descriptors += passed
                    guard !bytes.isEmpty else { break readLoop }
                    decoder.append(bytes)
                    do {
                        while let frame = try decoder.next() {
                            received = true
                            if case .transferTask(let task) = frame.message, task.file == true, !descriptors.isEmpty {
                                downloadedFiles.put(task.taskID, descriptors.removeFirst())
                            }
                            if case .voipSocket(let socket) = frame.message, socket.returned == true,
                                !descriptors.isEmpty
                            {
                                returnedSockets.put(socket.socketID, descriptors.removeFirst())
                            }
                            // An answer to an awaited request goes to its caller; everything else to `messages`.
                            if let id = frame.requestID, let waiter = requests.take(id) {
                                refused = false
                                waiter.resume(returning: frame.message)
                                continue
                            }
                            // The agent said why it closes (not authorized, unknown handler…): not a restart.
                            // Only an error that is the last frame before the close counts: an earlier one
                            // (taskInvalid, badRequest…) answered a single request.
                            if case .error = frame.message { refused = true } else { refused = false }
                            continuation.yield(frame.message)
                        }
                    } catch {
                        return
                    }
                }
                // Requests sent on the lost connection are never answered: they fail now.
                for waiter in requests.failPending() { waiter.resume(throwing: Self.connectionClosed) }
                if refused { return }
                if received || deadline == nil { deadline = Self.clock.deadline(after: Self.reconnectWindow) }
                guard let limit = deadline, let next = reconnect(until: limit) else { return }
                socket = next
            }
        }
    }

    /// The clock of the reconnect window.
    private static let clock = SystemClock()

    private static let connectionClosed = AgentRequestError(
        code: "connectionClosed", detail: "the connection to the agent closed before the answer")

    /// After the inherited connection closed: connects to the socket until it works or `deadline` passes, then
    /// registers again. Nil when there is nowhere to reconnect (a socket-path client) or the client was closed.
    private func reconnect(until deadline: RouseInstant) -> ClientSocket? {
        guard let path = connection.withLock({ $0.closed ? nil : $0.reconnectPath }) else { return nil }
        while Self.clock.now < deadline {
            if let socket = try? ClientSocket.connect(path: path) {
                let registration: AgentRequest? = connection.withLock { state in
                    state.socket = socket
                    return state.closed ? nil : state.registration
                }
                if let registration { try? socket.write(FrameCodec.encode(registration)) }
                return socket
            }
            Sys.pause(milliseconds: 50)
        }
        return nil
    }

    /// Sends one message.
    public func send(_ message: AgentRequest) throws {
        try send(message, requestID: nil)
    }

    func send(_ message: AgentRequest, requestID: Int?) throws {
        try connection.withLock { $0.socket }.write(FrameCodec.encode(message, requestID: requestID))
    }

    /// Registers as `handler` (the first message); `preservesState`: it opts in to state preservation (it
    /// will be asked to preserve and offered its state back at launch).
    public func register(handler: String, preservesState: Bool = false) throws {
        let message = AgentRequest.register(.init(handler: handler, preserves: preservesState ? true : nil))
        connection.withLock { $0.registration = message }
        try send(message)
    }

    /// Sends `message` with a fresh `requestID` and waits for the answer carrying it. An `error` answer
    /// throws ``AgentRequestError``, as does the connection closing first.
    public func request(_ message: AgentRequest) async throws -> AgentEvent {
        let answer: AgentEvent = try await withCheckedThrowingContinuation { waiter in
            guard let id = requests.register(waiter) else {
                waiter.resume(throwing: AgentRequestError(code: "connectionClosed", detail: "the connection is closed"))
                return
            }
            do {
                try send(message, requestID: id)
            } catch {
                requests.take(id)?.resume(throwing: error)
            }
        }
        if case .error(let failure) = answer { throw AgentRequestError(failure) }
        return answer
    }

    /// Reports a call (the CallKit `reportNewIncomingCall` moment for `pushID`, or an outgoing call with no
    /// push). The agent activates the handler's `call` session with `configuration` (default
    /// `playAndRecord` + `voiceChat`) and sends `activation` `callActivated` (or `delayed`).
    public func reportCall(pushID: String?, callID: String, configuration: SessionConfiguration? = nil) throws {
        try send(.reportCall(.init(pushID: pushID, callID: callID, configuration: configuration)))
    }

    /// The call ended. When it was the handler's last call, its call session ends; `notifyOthers` lets the
    /// sessions it interrupted resume (`interruptionEnded(shouldResume: true)`).
    public func callEnded(callID: String, notifyOthers: Bool = true) throws {
        try send(.callEnded(.init(callID: callID, notifyOthers: notifyOthers)))
    }

    /// Activates audio session `session` (AVAudioSession `setActive(true)`): `granted`, `denied(reason)` or
    /// `delayed` (a `granted` follows in `messages` when the blocking call ends). Later events for the
    /// session (interruptions, ducks, route changes) arrive in ``messages`` as `activation` messages.
    public func activate(
        session: String, configuration: SessionConfiguration, role: ActivationPriority = .media,
        acceptsDelay: Bool = false
    ) async throws -> ActivationMessage {
        let answer = try await request(
            .activate(.init(session: session, configuration: configuration, role: role, acceptsDelay: acceptsDelay)))
        guard case .activation(let activation) = answer, let event = activation.activationMessage else {
            throw AgentRequestError(code: "badAnswer", detail: "activate answered with \(answer.type)")
        }
        return event
    }

    /// Deactivates `session` (`setActive(false)`); with `notifyOthers` the sessions it interrupted may resume
    /// (`.notifyOthersOnDeactivation`), without they end.
    public func deactivate(session: String, notifyOthers: Bool = false) async throws {
        _ = try await request(.deactivate(.init(session: session, notifyOthers: notifyOthers)))
    }

    /// Completes a background push with `newData`, `noData` or `failed`.
    public func complete(pushID: String, result: BackgroundFetchResult) throws {
        try send(.complete(.init(pushID: pushID, result: result.rawValue)))
    }

    /// Asks for a background task; the agent answers with `taskBegun` carrying the token.
    public func beginTask(name: String) throws {
        try send(.beginTask(.init(taskName: name)))
    }

    /// Ends the background task with token `id`.
    public func endTask(id: Int) throws {
        try send(.endTask(.init(taskID: id)))
    }

    /// Declares the handler's state: `active`/`inactive` (foreground) or `background`.
    public func setState(_ state: String) throws {
        try send(.setState(.init(state: state)))
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
    typealias Waiter = CheckedContinuation<AgentEvent, any Error>
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
