/// What an active session does to another held session (the preemption matrix of B9).
enum Preemption: Sendable, Equatable {
    case none
    case duck
    case interrupt
}

/// The answer of the admission check.
enum Admission: Sendable, Equatable {
    case grant
    case delay
    case deny(DenialReason)
}

extension ActivationArbiter {
    /// The preemption matrix: what the active session `new` does to the held session `other`.
    ///
    /// - A call (call path) interrupts every session of priority ≤ call, mixable or not (WirePlumber's
    ///   "cork lower" for calls); it leaves an alert alone.
    /// - Otherwise a session never preempts one of higher priority.
    /// - Non-mixable `new`: interrupts a non-mixable `other`; interrupts a mixable `other` unless its role
    ///   keeps mixing (ambient, media, notification).
    /// - Mixable `new`: with `interruptSpokenAudioAndMixWithOthers`, interrupts a `spokenAudio` session;
    ///   with `duckOthers`, ducks a mixable session of strictly lower priority or a non-mixable one of
    ///   lower or equal priority; else leaves it alone.
    static func preemption(by new: Entry, of other: Entry) -> Preemption {
        if new.isCall { return other.priority <= .call ? .interrupt : .none }
        if other.priority > new.priority { return .none }
        if !new.isMixable {
            if !other.isMixable { return .interrupt }
            return other.priority.keepsMixingUnderNonMixable ? .none : .interrupt
        }
        let options = new.configuration.options
        if options.contains(.interruptSpokenAudioAndMixWithOthers) && other.configuration.mode == .spokenAudio {
            return .interrupt
        }
        if options.contains(.duckOthers) && (!other.isMixable || other.priority < new.priority) {
            return .duck
        }
        return .none
    }

    /// Whether `entry` may become active now: a non-mixable session is blocked by every active non-mixable
    /// session of higher priority; it waits (`delay`) if it accepts a delay (calls always do) and every
    /// blocker is a call — or, for a call, an alert — else it is refused.
    func admission(of entry: Entry) -> Admission {
        if entry.isMixable { return .grant }
        let blockers = entries.filter {
            $0.id != entry.id && $0.isActive && !$0.isMixable && $0.priority > entry.priority
        }
        if blockers.isEmpty { return .grant }
        if entry.isCall { return .delay }
        if entry.acceptsDelay && blockers.allSatisfy(\.isCall) { return .delay }
        return .deny(.insufficientPriority)
    }

    func index(of id: SessionID) -> Int? {
        entries.firstIndex { $0.id == id }
    }
}
