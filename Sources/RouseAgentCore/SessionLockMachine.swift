/// The lock screen's effect on protected data, as iOS orders it: when the session locks, handlers are told
/// `protectedDataWillBecomeUnavailable`, get a short grace to close their files, then the `complete` class key is
/// dropped; when it unlocks the key comes back first, then handlers are told `protectedDataDidBecomeAvailable`.
/// Lock reports come from logind (its `Lock`/`Unlock` signals and `LockedHint`, both, deduplicated here). Time is
/// injected (`now`, seconds on the agent's monotonic clock); the shell performs the actions.
package struct SessionLockMachine: Sendable, Equatable {
    /// Where the session stands.
    package enum Phase: Sendable, Equatable {
        /// Unlocked: every class available.
        case unlocked
        /// Locked, handlers told, keys still held until `deadline` (the grace to close files).
        case closing(deadline: Double)
        /// Locked: `complete` keys dropped.
        case locked
    }

    /// What the shell must do.
    package enum Action: Sendable, Equatable {
        /// Tell every connected handler `protectedDataWillBecomeUnavailable`.
        case tellWillBecomeUnavailable
        /// Wake the machine at `deadline` (``tick(now:)``).
        case armTimer(deadline: Double)
        /// Cancel the timer armed before.
        case cancelTimer
        /// Drop the `complete` class key (report `locked` to the key ring).
        case dropKeys
        /// Derive the class keys again (report `unlocked` to the key ring).
        case loadKeys
        /// Tell every connected handler `protectedDataDidBecomeAvailable`.
        case tellDidBecomeAvailable
        /// The session was unlocked for the first time since the agent started: what waited for it may go on.
        case firstUnlock
    }

    /// The current phase.
    package private(set) var phase: Phase
    /// Whether the session was unlocked at least once since the agent started.
    package private(set) var unlockedOnce: Bool
    /// How long handlers have between being told and the keys being dropped.
    package let grace: Double

    /// A machine as logind reported the session at start: `locked` (or no session yet) or unlocked. An agent that
    /// starts in an unlocked session counts it as the first unlock.
    package init(locked: Bool, grace: Double = 0.5) {
        phase = locked ? .locked : .unlocked
        unlockedOnce = !locked
        self.grace = grace
    }

    /// logind says the session locked (`Lock`, or `LockedHint` true).
    package mutating func locked(now: Double) -> [Action] {
        guard phase == .unlocked else { return [] }
        let deadline = now + grace
        phase = .closing(deadline: deadline)
        return [.tellWillBecomeUnavailable, .armTimer(deadline: deadline)]
    }

    /// logind says the session unlocked (`Unlock`, or `LockedHint` false).
    package mutating func unlocked(now: Double) -> [Action] {
        switch phase {
        case .unlocked:
            return []
        case .closing:
            // Unlocked within the grace: the keys never went; the handlers, told they would, are told they are back.
            phase = .unlocked
            return [.cancelTimer, .tellDidBecomeAvailable]
        case .locked:
            phase = .unlocked
            var actions: [Action] = [.loadKeys, .tellDidBecomeAvailable]
            if !unlockedOnce { actions.append(.firstUnlock) }
            unlockedOnce = true
            return actions
        }
    }

    /// The timer armed by ``locked(now:)``: the grace is over.
    package mutating func tick(now: Double) -> [Action] {
        guard case .closing(let deadline) = phase, now >= deadline else { return [] }
        phase = .locked
        return [.dropKeys]
    }

    /// Whether `complete` files are readable now (keys held: unlocked, or within the grace).
    package var completeAvailable: Bool { phase != .locked }
}
