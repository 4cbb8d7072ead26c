import FoundationEssentials
import Logging
import RouseActivation
import RouseAgentClient
import RouseAgentCore
import RouseWire

/// Activation coordination: feeds ``ActivationArbiter`` with handler requests, calls, lifecycle changes and deaths,
/// and performs what it returns (messages to holders, hook runs). Owns the arbiter, what it was last told of each
/// handler's run state and the messages waiting for a handler to reconnect; reads the handler table for connections
/// and keeps each handler's "holds audio" in its rules. Owned by the ``Agent`` and touched only on its isolation.
/// Every step returns whether a handler's "holds audio" changed (the agent then reschedules the rules' timer). See
/// docs/activations.md.
final class ActivationCoordinator {
    /// Who holds audio (activations).
    private var arbiter = ActivationArbiter()
    /// What the arbiter was last told of each handler's run state.
    private var states: [String: HandlerState] = [:]
    /// Activation messages for a handler whose process runs but is not connected (re-attached after an agent
    /// restart, not yet reconnected): sent, in order, when it registers.
    private var outbox: [String: [IPCFrame<AgentEvent>]] = [:]
    /// Handlers whose playback was found silent past its grace: their sessions no longer keep them from being frozen
    /// (``silence(_:)``, Agent+Audible.swift).
    private var silenced: Set<String> = []
    private let hooks: ActivationHookRunner?
    private let handlers: HandlerTable
    private let time: AgentTime
    private let logger: Logger

    /// A coordinator for `handlers`, running `hooks` on grants and revokes.
    init(handlers: HandlerTable, hooks: ActivationHookRunner?, time: AgentTime, logger: Logger) {
        self.handlers = handlers
        self.hooks = hooks
        self.time = time
        self.logger = logger
    }

    /// The per-user mode's session environment changed (reload): the hook's runs get its audio server from now on.
    func sessionEnvironmentChanged(_ session: [String: String]) { hooks?.setSession(session) }

    /// Sessions one handler may hold or wait for at once (each arbiter step is linear to quadratic in them).
    static let maxSessionsPerHandler = 16
    /// Longest session name (names reach logs and the hook's environment).
    static let maxSessionNameLength = 64

    static func isValidSessionName(_ name: String) -> Bool {
        name.utf8.count <= maxSessionNameLength
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2E || byte == 0x5F || byte == 0x2D
            }
    }

    /// `activate` from registered handler `name`: answered with `activation` (granted, denied or delayed)
    /// carrying the request id, or an `error` frame for a malformed request.
    func activate(
        _ name: String, _ connection: IPCConnection, _ message: AgentRequest.Activate, requestID: Int?
    ) {
        guard let session = message.session, !session.isEmpty else {
            connection.sendError("badRequest", "activate needs session", requestID: requestID)
            return
        }
        guard Self.isValidSessionName(session) else {
            connection.sendError(
                "badRequest", "session names are 1–\(Self.maxSessionNameLength) of A-Z a-z 0-9 . _ -",
                requestID: requestID)
            return
        }
        let held = arbiter.snapshot.sessions.filter { $0.session.handler.rawValue == name }
        if held.count >= Self.maxSessionsPerHandler && !held.contains(where: { $0.session.name == session }) {
            connection.sendError(
                "tooManySessions",
                "a handler holds at most \(Self.maxSessionsPerHandler) sessions; deactivate one first",
                requestID: requestID)
            return
        }
        let configuration: SessionConfiguration
        let priority: ActivationPriority
        do {
            guard let parsed = try message.sessionConfiguration() else {
                connection.sendError("badRequest", "activate needs category", requestID: requestID)
                return
            }
            configuration = parsed
            let role = message.role ?? ActivationPriority.media.rawValue
            guard let parsedRole = ActivationPriority(rawValue: role) else {
                let known = ActivationPriority.allCases.map(\.rawValue).joined(separator: ", ")
                connection.sendError("badRequest", "unknown role \(role) (\(known))", requestID: requestID)
                return
            }
            priority = parsedRole
        } catch {
            connection.sendError(error.code, error.detail, requestID: requestID)
            return
        }
        let request = ActivationRequest(
            session: SessionID(handler: HandlerID(name), name: session), configuration: configuration,
            priority: priority, acceptsDelay: message.acceptsDelay ?? false)
        perform(
            arbiter.activate(request, now: time.seconds), answering: request.session, requestID: requestID)
    }

    /// `deactivate` from registered handler `name`: always succeeds (`ok`); the call session ends only through
    /// `callEnded`.
    func deactivate(
        _ name: String, _ connection: IPCConnection, _ message: AgentRequest.Deactivate, requestID: Int?
    ) {
        guard let session = message.session, !session.isEmpty else {
            connection.sendError("badRequest", "deactivate needs session", requestID: requestID)
            return
        }
        guard session != SessionID.callName else {
            connection.sendError("callPathRequired", "the call session ends with callEnded", requestID: requestID)
            return
        }
        connection.send(.ok(.init(session: session)), requestID: requestID)
        let id = SessionID(handler: HandlerID(name), name: session)
        perform(arbiter.deactivate(id, notifyOthers: message.notifyOthers ?? false, now: time.seconds))
    }

    /// The handler reported a call: its call session is activated (CallKit's `didActivate`). A configuration
    /// the handler gave that is invalid gets an `error` frame; the call is still taken, with the default one.
    func callStarted(_ name: String, _ connection: IPCConnection, _ message: AgentRequest.ReportCall) {
        var configuration = SessionConfiguration.voiceCall
        do {
            if let given = try message.sessionConfiguration() { configuration = given }
        } catch {
            connection.sendError(error.code, error.detail + " (the call uses playAndRecord/voiceChat)")
        }
        perform(arbiter.callStarted(HandlerID(name), configuration: configuration, now: time.seconds))
    }

    /// The handler's last call ended: its call session ends.
    func callEnded(_ name: String, notifyOthers: Bool) {
        perform(arbiter.callEnded(HandlerID(name), notifyOthers: notifyOthers, now: time.seconds))
    }

    /// The handler's connection closed, its process exited, or the agent terminates it: every session it
    /// holds ends as a deactivation with notify. Idempotent.
    func holderGone(_ name: String, reason: HolderGoneReason) {
        states[name] = nil
        outbox[name] = nil
        silenced.remove(name)
        perform(arbiter.holderGone(HandlerID(name), reason: reason, now: time.seconds))
    }

    /// Asks the arbiter before freezing handler `name`: `may` false while it holds a call or background-capable
    /// audio (it is then not frozen); otherwise its sessions are interrupted (`appSuspended`) first.
    func mayFreeze(_ name: String) -> Bool {
        let decision = arbiter.handlerSuspended(
            HandlerID(name), now: time.seconds, silentPlayback: silenced.contains(name))
        guard decision.mayBeSuspended else {
            logger.notice("handler holds audio: not suspended", metadata: ["handler": "\(name)"])
            return false
        }
        states[name] = .suspended
        silenced.remove(name)
        perform(decision.effects)
        return true
    }

    /// Whether `name`'s sessions keep it from being frozen now (a call, or background-capable audio not found
    /// silent): what the agent writes into its rules (`HandlerMachine.setHoldsAudio`) after each step here.
    func holdsAudio(_ name: String) -> Bool {
        !arbiter.mayBeSuspended(HandlerID(name)) && !silenced.contains(name)
    }

    /// Whether only active playback sessions keep `name` from being frozen (the protection that must be audible).
    func protectedOnlyByPlayback(_ name: String) -> Bool { arbiter.protectedOnlyByPlayback(HandlerID(name)) }

    /// `name`'s playback was found silent past its grace: its sessions stop keeping it from being frozen (its next
    /// suspension interrupts them).
    func silence(_ name: String) {
        silenced.insert(name)
    }

    /// `name` is no longer watched (foreground, session ended): its sessions protect it again if it holds any.
    func unsilence(_ name: String) {
        silenced.remove(name)
    }

    /// An external route source reported a route change: forwarded to every active session.
    func routeChanged(_ reason: String) {
        perform(arbiter.routeChanged(RouteChangeReason(rawValue: reason), now: time.seconds))
    }

    /// Tells the arbiter the handler's run state when its lifecycle moved (foreground: active or inactive;
    /// background: background or launching). Suspension goes through ``mayFreeze(_:)``, death through
    /// ``holderGone(_:reason:)``.
    func sync(_ name: String) {
        guard let lifecycle = handlers.machine(of: name)?.lifecycle else { return }
        let desired: HandlerState
        switch lifecycle {
        case .active, .inactive: desired = .foreground
        case .background, .launching: desired = .background
        case .suspended, .notRunning: return
        }
        let previous = states[name]
        guard previous != desired else { return }
        states[name] = desired
        // The arbiter counts a handler it was never told about as in the background.
        if previous == nil && desired == .background { return }
        perform(
            arbiter.handlerStateChanged(
                HandlerID(name), to: desired == .foreground ? .foreground : .background, now: time.seconds))
    }

    /// Performs arbiter effects in order: messages to holders (the first answer for `answering` carries
    /// `requestID`), hook runs. Each handler's "holds audio" is the agent's to write (``holdsAudio(_:)``).
    private func perform(_ effects: [ActivationEffect], answering: SessionID? = nil, requestID: Int? = nil) {
        var answered = false
        for effect in effects {
            switch effect {
            case .notify(let session, let event):
                var id: Int?
                if !answered, session == answering {
                    switch event {
                    case .granted, .denied, .delayed:
                        id = requestID
                        answered = true
                    default: break
                    }
                }
                let frame = IPCFrame(AgentEvent.activation(.init(event, session: session.name)), requestID: id)
                let name = session.handler.rawValue
                if let connection = handlers.connection(of: name) {
                    connection.send(frame)
                } else if handlers.process(of: name) != nil {
                    // Running, not connected yet (re-attached after a restart): kept for its registration.
                    outbox[name, default: []].append(frame)
                }
                logger.debug(
                    "activation event",
                    metadata: [
                        "handler": "\(session.handler)", "session": "\(session.name)", "event": "\(event.event)",
                    ])
            case .hook(let event):
                hooks?.run(event)
            }
        }
    }

    /// At start, from the agent's preserved state: the arbiter as it was. Handlers whose process did not
    /// survive the restart (not re-attached) release their sessions now, with notify; the others' messages wait
    /// in the outbox until they reconnect.
    func restore(_ snapshot: ActivationSnapshot) {
        arbiter = ActivationArbiter(restoring: snapshot)
        for holder in snapshot.handlers { states[holder.handler.rawValue] = holder.state }
        var known = Set(snapshot.handlers.map(\.handler))
        known.formUnion(snapshot.sessions.map(\.session.handler))
        for handler in known.sorted() where handlers.process(of: handler.rawValue) == nil {
            holderGone(handler.rawValue, reason: .processExited)
        }
        logger.info(
            "activations restored",
            metadata: [
                "sessions": "\(arbiter.snapshot.sessions.count)",
                "released": "\(snapshot.sessions.count - arbiter.snapshot.sessions.count)",
            ])
    }

    /// Sends what waited for `name`'s registration.
    func flushOutbox(_ name: String) {
        guard let frames = outbox.removeValue(forKey: name), let connection = handlers.connection(of: name) else {
            return
        }
        for frame in frames { connection.send(frame) }
    }

    /// The arbiter's snapshot: who holds what and who waits.
    var snapshot: ActivationSnapshot { arbiter.snapshot }

    /// Waits for the hook runs under way (agent shutdown).
    func drainHooks(isolation: isolated (any Actor)? = #isolation) async { await hooks?.drain() }
}
