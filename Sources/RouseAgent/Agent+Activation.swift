import Foundation
import Logging
import RouseActivation
import RouseAgentClient
import RouseAgentCore
import RouseWire

/// Activations: the agent feeds ``ActivationArbiter`` with handler requests, calls, lifecycle
/// changes and deaths, and performs what it returns (messages to holders, hook runs). See
/// docs/activations.md.
extension Agent {
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

    /// The arbiter's clock: the agent's monotonic time in seconds.
    var activationClock: Double {
        let (seconds, attoseconds) = now.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `activate` from registered handler `name`: answered with `activation` (granted, denied or delayed)
    /// carrying the request id, or an `error` frame for a malformed request.
    func activate(_ name: String, _ connection: IPCConnection, _ message: AgentRequest.Activate, requestID: Int?) {
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
        performActivation(
            arbiter.activate(request, now: activationClock), answering: request.session, requestID: requestID)
    }

    /// `deactivate` from registered handler `name`: always succeeds (`ok`); the call session ends only through
    /// `callEnded`.
    func deactivate(_ name: String, _ connection: IPCConnection, _ message: AgentRequest.Deactivate, requestID: Int?) {
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
        performActivation(arbiter.deactivate(id, notifyOthers: message.notifyOthers ?? false, now: activationClock))
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
        performActivation(arbiter.callStarted(HandlerID(name), configuration: configuration, now: activationClock))
    }

    /// The handler's last call ended: its call session ends.
    func callEnded(_ name: String, notifyOthers: Bool) {
        performActivation(arbiter.callEnded(HandlerID(name), notifyOthers: notifyOthers, now: activationClock))
    }

    /// The handler's connection closed, its process exited, or the agent terminates it: every session it
    /// holds ends as a deactivation with notify. Idempotent.
    func holderGone(_ name: String, reason: HolderGoneReason) {
        arbiterStates[name] = nil
        activationOutbox[name] = nil
        performActivation(arbiter.holderGone(HandlerID(name), reason: reason, now: activationClock))
    }

    /// Asks the arbiter before freezing handler `name`: false while it holds a call or background-capable
    /// audio (it is then not frozen); otherwise its sessions are interrupted (`appSuspended`) first.
    func mayFreeze(_ name: String) -> Bool {
        let decision = arbiter.handlerSuspended(HandlerID(name), now: activationClock)
        guard decision.mayBeSuspended else {
            logger.notice("handler holds audio: not suspended", metadata: ["handler": "\(name)"])
            return false
        }
        arbiterStates[name] = .suspended
        performActivation(decision.effects)
        return true
    }

    /// An external route source reported a route change: forwarded to every active session.
    func routeChanged(_ reason: String) {
        performActivation(arbiter.routeChanged(RouteChangeReason(rawValue: reason), now: activationClock))
    }

    /// Tells the arbiter the handler's run state when its lifecycle moved (foreground: active or inactive;
    /// background: background or launching). Suspension goes through ``mayFreeze(_:)``, death through
    /// ``holderGone(_:reason:)``.
    func syncActivation(_ name: String) {
        guard let lifecycle = slots[name]?.machine.lifecycle else { return }
        let desired: HandlerState
        switch lifecycle {
        case .active, .inactive: desired = .foreground
        case .background, .launching: desired = .background
        case .suspended, .notRunning: return
        }
        let previous = arbiterStates[name]
        guard previous != desired else { return }
        arbiterStates[name] = desired
        // The arbiter counts a handler it was never told about as in the background.
        if previous == nil && desired == .background { return }
        performActivation(
            arbiter.handlerStateChanged(
                HandlerID(name), to: desired == .foreground ? .foreground : .background, now: activationClock))
    }

    /// Performs arbiter effects in order: messages to holders (the first answer for `answering` carries
    /// `requestID`), hook runs. Then keeps each handler's "holds audio" (no suspension) in step.
    func performActivation(_ effects: [ActivationEffect], answering: SessionID? = nil, requestID: Int? = nil) {
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
                if let connection = slots[name]?.connection {
                    connection.send(frame)
                } else if slots[name]?.process != nil {
                    // Running, not connected yet (re-attached after a restart): kept for its registration.
                    activationOutbox[name, default: []].append(frame)
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
        var holdChanged = false
        let current = now
        for name in slots.keys {
            let holds = !arbiter.mayBeSuspended(HandlerID(name))
            guard slots[name]!.machine.holdsAudio != holds else { continue }
            slots[name]!.machine.setHoldsAudio(holds, now: current)
            holdChanged = true
        }
        if holdChanged { rescheduleTimer() }
    }

    /// At start, from the agent's preserved state: the arbiter as it was. Handlers whose process did not
    /// survive the restart (not re-attached) release their sessions now, with notify; the others' messages wait
    /// in the outbox until they reconnect.
    func restoreActivations(_ snapshot: ActivationSnapshot) {
        arbiter = ActivationArbiter(restoring: snapshot)
        for holder in snapshot.handlers { arbiterStates[holder.handler.rawValue] = holder.state }
        var known = Set(snapshot.handlers.map(\.handler))
        known.formUnion(snapshot.sessions.map(\.session.handler))
        for handler in known.sorted() where slots[handler.rawValue]?.process == nil {
            holderGone(handler.rawValue, reason: .processExited)
        }
        performActivation([])  // each handler's "holds audio" from the restored sessions
        logger.info(
            "activations restored",
            metadata: [
                "sessions": "\(arbiter.snapshot.sessions.count)",
                "released": "\(snapshot.sessions.count - arbiter.snapshot.sessions.count)",
            ])
    }

    /// Sends what waited for `name`'s registration.
    func flushActivationOutbox(_ name: String) {
        guard let frames = activationOutbox.removeValue(forKey: name), let connection = slots[name]?.connection else {
            return
        }
        for frame in frames { connection.send(frame) }
    }

    /// The arbiter's snapshot: who holds what and who waits.
    public func activationSnapshot() -> ActivationSnapshot { arbiter.snapshot }
}
