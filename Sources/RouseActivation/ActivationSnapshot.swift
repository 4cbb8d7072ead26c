import RouseText

/// Who holds what and who waits, for `rouse agent sessions [--json]`.
public struct ActivationSnapshot: Sendable, Hashable, Codable {
    /// Every held or waiting session, in request order.
    public var sessions: [SessionSnapshot]
    /// Every handler the arbiter knows, sorted by identity.
    public var handlers: [HolderSnapshot]

    /// The JSON rendering (sorted keys, pretty-printed), as `--json` prints it.
    public func json() -> String {
        // Every member is a plain string, number, bool, array or optional: encoding cannot fail.
        String(decoding: (try? JSONCoding.encodePretty(self)) ?? Array("{}".utf8), as: UTF8.self)
    }

    /// The human rendering: one line per session, then one per handler.
    public var text: String {
        var lines = ["SESSION\tROLE\tCATEGORY\tMODE\tOPTIONS\tSTATE\tSINCE"]
        for session in sessions {
            var state = session.state.rawValue
            if let reason = session.interruptionReason { state += "(\(reason.rawValue))" }
            if !session.interruptedBy.isEmpty {
                state += " by " + session.interruptedBy.map(\.description).joined(separator: ",")
            }
            let options = session.configuration.options.members.map(\.rawValue).joined(separator: ",")
            lines.append(
                [
                    session.session.description, session.priority.rawValue,
                    session.configuration.category.rawValue, session.configuration.mode.rawValue,
                    options.isEmpty ? "-" : options, state, String(session.since),
                ].joined(separator: "\t"))
        }
        lines.append("HANDLER\tSTATE\tIN-CALL\tMAY-SUSPEND")
        for handler in handlers {
            lines.append(
                [handler.handler.rawValue, handler.state.rawValue, "\(handler.inCall)", "\(handler.mayBeSuspended)"]
                    .joined(separator: "\t"))
        }
        return lines.joined(separator: "\n")
    }
}

/// One session in a snapshot.
public struct SessionSnapshot: Sendable, Hashable, Codable {
    /// The state of a session.
    public enum State: String, Sendable, Hashable, Codable {
        /// Granted, at full volume.
        case active
        /// Granted, ducked by a higher-priority session.
        case ducked
        /// Interrupted; waits for its interrupters to leave (or for its holder to thaw).
        case interrupted
        /// Waiting for a delayed grant.
        case delayed
    }

    /// The session.
    public var session: SessionID
    /// Its role.
    public var priority: ActivationPriority
    /// Its configuration.
    public var configuration: SessionConfiguration
    /// Whether it is a call session.
    public var isCall: Bool
    /// Its state.
    public var state: State
    /// Why it is interrupted, if it is.
    public var interruptionReason: InterruptionReason?
    /// The sessions that interrupted it and are still held.
    public var interruptedBy: [SessionID]
    /// When it was requested or last granted (the agent's monotonic seconds).
    public var since: Double
    /// Whether its request accepted a delayed grant (calls always do).
    public var acceptsDelay: Bool
}

/// One handler in a snapshot.
public struct HolderSnapshot: Sendable, Hashable, Codable {
    /// The handler.
    public var handler: HandlerID
    /// Its run state.
    public var state: HandlerState
    /// Whether it has a reported call.
    public var inCall: Bool
    /// Whether the agent may freeze it now.
    public var mayBeSuspended: Bool
}

extension ActivationArbiter {
    /// The current state, for `rouse agent sessions`.
    public var snapshot: ActivationSnapshot {
        let sessions = entries.map { entry in
            var state = SessionSnapshot.State.active
            var reason: InterruptionReason?
            var blockers: [SessionID] = []
            switch entry.status {
            case .active: state = entry.ducked ? .ducked : .active
            case .interrupted(let why, let by):
                (state, reason, blockers) = (.interrupted, why, by)
            case .suspended(let why): (state, reason) = (.interrupted, why)
            case .delayed: state = .delayed
            }
            return SessionSnapshot(
                session: entry.id, priority: entry.priority, configuration: entry.configuration,
                isCall: entry.isCall, state: state, interruptionReason: reason, interruptedBy: blockers,
                since: entry.since, acceptsDelay: entry.acceptsDelay)
        }
        var known = Set(holders.keys)
        known.formUnion(entries.map(\.id.handler))
        let handlers = known.sorted().map { handler in
            let holder = holders[handler] ?? Holder()
            return HolderSnapshot(
                handler: handler, state: holder.state, inCall: holder.inCall,
                mayBeSuspended: mayBeSuspended(handler))
        }
        return ActivationSnapshot(sessions: sessions, handlers: handlers)
    }
}

extension ActivationArbiter {
    /// The arbiter a snapshot describes, for an agent that restarts while its handlers keep running (the
    /// snapshot is preserved with the agent's own state). Lossless: the restored arbiter has the same snapshot
    /// and answers every later step with the same effects (tested step by step over random sequences). An
    /// interrupted session with no interrupter left is one suspension holds (`handlerSuspended`).
    public init(restoring snapshot: ActivationSnapshot) {
        self.init()
        for handler in snapshot.handlers {
            holders[handler.handler] = Holder(state: handler.state, inCall: handler.inCall)
        }
        entries = snapshot.sessions.map { session in
            let status: Status
            switch session.state {
            case .active, .ducked: status = .active
            case .delayed: status = .delayed
            case .interrupted:
                status =
                    session.interruptedBy.isEmpty
                    ? .suspended(session.interruptionReason ?? .appSuspended)
                    : .interrupted(session.interruptionReason ?? .preempted, blockers: session.interruptedBy)
            }
            return Entry(
                id: session.session, configuration: session.configuration, priority: session.priority,
                acceptsDelay: session.acceptsDelay, status: status, ducked: session.state == .ducked,
                since: session.since)
        }
    }
}
