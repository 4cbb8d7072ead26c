/// The activation arbiter: which sessions are active, ducked, interrupted or waiting, as a plain value.
/// Every step returns the effects the agent performs (messages to holders, hook runs); nothing here does
/// I/O or reads a clock (`now` is the agent's monotonic time in seconds, kept for the snapshot).
///
/// Rules (DESIGN §4, agent reference B9); see `docs/activations.md` for the full table:
/// - A non-mixable request is refused `cannotInterruptOthers` when its handler is in the background and has
///   no call; `insufficientPriority` when a non-mixable session of higher priority is active — or delayed,
///   if it accepts a delay and every blocker is a call.
/// - A granted (or resumed) session preempts each other held session: interrupt, duck or leave alone
///   (`preemption(by:of:)`). A session is never preempted by one of lower priority.
/// - Ducking is derived: an active session is ducked while some active session would duck it.
/// - A session that ends releases the sessions it interrupted: with notify, each resumes
///   (`interruptionEnded(shouldResume: true)`) once nothing else blocks it; without, each ends at once
///   (`interruptionEnded(shouldResume: false)`, inactive). Holder death, IPC close and agent termination
///   release with notify.
public struct ActivationArbiter: Sendable {
    struct Entry: Sendable {
        var id: SessionID
        var configuration: SessionConfiguration
        var priority: ActivationPriority
        var acceptsDelay: Bool
        var status: Status
        var ducked = false
        var since: Double

        var isCall: Bool { id.isCall }
        /// Call sessions never mix; ambient-priority sessions always do.
        var isMixable: Bool { !isCall && (priority == .ambient || configuration.isMixable) }
        var isActive: Bool { status == .active }
    }

    enum Status: Sendable, Equatable {
        /// Granted; may also be ducked.
        case active
        /// Stopped by the sessions in `blockers` (held sessions that preempted it).
        case interrupted(InterruptionReason, blockers: [SessionID])
        /// Stopped because its holder is suspended; ends (`shouldResume: false`) when the holder thaws.
        /// `reason` is the one the holder was told when the interruption began.
        case suspended(InterruptionReason)
        /// Waiting for a grant.
        case delayed
    }

    struct Holder: Sendable {
        var state: HandlerState = .background
        var inCall = false
    }

    var entries: [Entry] = []
    var holders: [HandlerID: Holder] = [:]

    /// An arbiter with no sessions.
    public init() {}

    /// Activates a session (`setActive(true)`). Effects: `granted`, `denied(reason)` or `delayed` for the
    /// requester, then the preemption of the others (interruptions, ducks) and hook events. Re-activating
    /// an active session with the same configuration and priority is granted again with no other effect;
    /// re-activating a delayed one replaces its request.
    public mutating func activate(_ request: ActivationRequest, now: Double) -> [ActivationEffect] {
        var step = Step(self)
        let id = request.session
        let holder = holders[request.handler] ?? Holder()
        if holder.state == .suspended {
            step.send(id, .denied(.appSuspended))
        } else if request.priority == .call || id.isCall {
            step.send(id, .denied(.callPathRequired))
        } else if let index = index(of: id), entries[index].status != .delayed {
            let same =
                entries[index].isActive && entries[index].configuration == request.configuration
                && entries[index].priority == request.priority
            step.send(id, same ? .granted : .denied(.alreadyActive))
        } else {
            entries.removeAll { $0.id == id }
            var entry = Entry(
                id: id, configuration: request.configuration, priority: request.priority,
                acceptsDelay: request.acceptsDelay, status: .delayed, since: now)
            if !entry.isMixable && holder.state != .foreground && !holder.inCall {
                step.send(id, .denied(.cannotInterruptOthers))
            } else {
                switch admission(of: entry) {
                case .grant:
                    entries.append(entry)
                    grant(at: entries.count - 1, now: now, &step)
                case .delay:
                    entry.status = .delayed
                    entries.append(entry)
                    step.send(id, .delayed)
                case .deny(let reason):
                    step.send(id, .denied(reason))
                }
            }
        }
        return finish(&step, now: now)
    }

    /// Deactivates a session (`setActive(false)`); always succeeds. The holder gets the ends of its open
    /// begins (`duckEnded`, `interruptionEnded(shouldResume: false)`); the sessions it interrupted resume if
    /// `notifyOthers` (once nothing else blocks them), else end. A delayed request is dropped. Unknown
    /// sessions and call sessions (which end with `callEnded`) are ignored.
    public mutating func deactivate(_ session: SessionID, notifyOthers: Bool, now: Double) -> [ActivationEffect] {
        var step = Step(self)
        if !session.isCall {
            release(session, notify: notifyOthers, holderAlive: true, &step)
        }
        return finish(&step, now: now)
    }

    /// The handler reported a call (CallKit's report of an incoming or outgoing call, or unhold): the arbiter
    /// activates its call session (`SessionID.call(of:)`) at call priority and sends `callActivated`, or
    /// `delayed` while a non-mixable alert is active. Every other session of priority ≤ call is interrupted.
    /// A suspended handler is thawed first. Idempotent while the call session exists.
    public mutating func callStarted(
        _ handler: HandlerID, configuration: SessionConfiguration = .voiceCall, now: Double
    ) -> [ActivationEffect] {
        var step = Step(self)
        if holders[handler]?.state == .suspended {
            thaw(handler, to: .background, &step)
        }
        holders[handler, default: Holder()].inCall = true
        let id = SessionID.call(of: handler)
        if index(of: id) == nil {
            let entry = Entry(
                id: id, configuration: configuration, priority: .call, acceptsDelay: true, status: .delayed,
                since: now)
            entries.append(entry)
            if admission(of: entry) == .grant {
                grant(at: entries.count - 1, now: now, &step)
            } else {
                step.send(id, .delayed)
            }
        }
        return finish(&step, now: now)
    }

    /// The handler's call ended: its call session ends (`callDeactivated` if it had been activated, after
    /// the ends of its open begins) and the sessions it interrupted resume if `notifyOthers`, else end.
    /// Delayed requests waiting for the call are then granted if nothing else blocks them.
    public mutating func callEnded(_ handler: HandlerID, notifyOthers: Bool = true, now: Double) -> [ActivationEffect] {
        var step = Step(self)
        holders[handler]?.inCall = false
        release(.call(of: handler), notify: notifyOthers, holderAlive: true, &step)
        return finish(&step, now: now)
    }

    /// The holder is gone (IPC closed, process exited, or terminated by the agent): all its sessions end
    /// as if deactivated with `notifyOthers`, its call ends, and nothing is sent to it.
    public mutating func holderGone(_ handler: HandlerID, reason: HolderGoneReason, now: Double) -> [ActivationEffect] {
        var step = Step(self)
        let gone = entries.filter { $0.id.handler == handler }.map(\.id)
        entries.removeAll { $0.id.handler == handler }
        holders[handler] = nil
        for id in gone {
            releaseVictims(of: id, notify: true, &step)
        }
        return finish(&step, now: now)
    }

    /// The agent wants to suspend (freeze) the handler. Refused (`mayBeSuspended == false`, no change) while
    /// the handler has a reported call or an active session of a background-capable category (playback,
    /// record, playAndRecord — iOS's audio background mode). Otherwise the handler is marked suspended: its
    /// active sessions get `interruptionBegan(appSuspended)`, its delayed requests `denied(appSuspended)`, and
    /// the sessions they had interrupted are released with notify. The interruptions end
    /// (`shouldResume: false`) when `handlerStateChanged` thaws it.
    ///
    /// `silentPlayback`: the agent found the handler's playback silent past its grace (ActivationArbiter+Silence.swift):
    /// its playback sessions no longer refuse the suspension (a call or a record session still does).
    public mutating func handlerSuspended(_ handler: HandlerID, now: Double, silentPlayback: Bool = false)
        -> SuspensionDecision
    {
        guard mayBeSuspended(handler) || (silentPlayback && protectedOnlyByPlayback(handler)) else {
            return SuspensionDecision(mayBeSuspended: false, effects: [])
        }
        var step = Step(self)
        holders[handler, default: Holder()].state = .suspended
        var released: [SessionID] = []
        var index = 0
        while index < entries.count {
            let entry = entries[index]
            guard entry.id.handler == handler else {
                index += 1
                continue
            }
            switch entry.status {
            case .active:
                closeDuck(at: index, &step)
                entries[index].status = .suspended(.appSuspended)
                step.send(entry.id, .interruptionBegan(.appSuspended))
                released.append(entry.id)
            case .interrupted(let reason, _):
                entries[index].status = .suspended(reason)
                released.append(entry.id)
            case .delayed:
                entries.remove(at: index)
                step.send(entry.id, .denied(.appSuspended))
                continue
            case .suspended:
                break
            }
            index += 1
        }
        for id in released {
            releaseVictims(of: id, notify: true, &step)
        }
        return SuspensionDecision(mayBeSuspended: true, effects: finish(&step, now: now))
    }

    /// Whether the handler may be frozen now (see `handlerSuspended`).
    public func mayBeSuspended(_ handler: HandlerID) -> Bool {
        if holders[handler]?.inCall == true { return false }
        return !entries.contains {
            $0.id.handler == handler && $0.isActive && ($0.isCall || $0.configuration.category.runsInBackground)
        }
    }

    /// The handler is in the foreground or the background. Leaving suspension ends the interruptions that
    /// suspension began or held (`interruptionEnded(shouldResume: false)`: those sessions are inactive).
    public mutating func handlerStateChanged(_ handler: HandlerID, to activity: HandlerActivity, now: Double)
        -> [ActivationEffect]
    {
        var step = Step(self)
        thaw(handler, to: activity, &step)
        return finish(&step, now: now)
    }

    /// A route change reported by an external source (hook, IPC): forwarded to every active session.
    public mutating func routeChanged(_ reason: RouteChangeReason, now: Double) -> [ActivationEffect] {
        var step = Step(self)
        for entry in entries where entry.isActive {
            step.send(entry.id, .routeChanged(reason))
        }
        return finish(&step, now: now)
    }
}

/// The answer to `handlerSuspended`.
public struct SuspensionDecision: Sendable, Hashable {
    /// False while the handler has a call or an active background-capable session: do not freeze it.
    public var mayBeSuspended: Bool
    /// The effects of the suspension (empty when refused).
    public var effects: [ActivationEffect]
}
