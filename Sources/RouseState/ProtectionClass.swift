/// When a sealed file can be read, in the spirit of iOS file protection classes.
package enum ProtectionClass: String, Sendable, CaseIterable, Codable {
    /// Readable whenever the agent runs, from boot on, without any user (iOS class D). What a system daemon
    /// needs to handle pushes before anyone logs in.
    case none
    /// Unreadable after the agent starts until the user's session is first unlocked; readable from then on,
    /// even while locked again (iOS "complete until first user authentication", class C).
    case untilFirstUnlock = "until-first-unlock"
    /// Readable only while the session is unlocked: its key is dropped from memory when the session locks and
    /// derived again when it unlocks (iOS "complete", class A).
    case complete
    /// A file can be created and written while the session is locked, but read only while it is unlocked; a file
    /// opened while unlocked stays readable and writable through that open file after the lock (iOS "complete
    /// unless open", class B). Public-key scheme: each file has its own key, agreed (X25519) with the class's
    /// public key, which is always held; the class's private key is dropped on lock like `complete`'s key. An open
    /// file keeps its own file key (``SealedStore/OpenFile``), so it outlives the lock.
    case completeUnlessOpen = "complete-unless-open"

    /// The code stored in a sealed file's header.
    var code: UInt8 {
        switch self {
        case .none: 0
        case .untilFirstUnlock: 1
        case .complete: 2
        case .completeUnlessOpen: 3
        }
    }

    init?(code: UInt8) {
        switch code {
        case 0: self = .none
        case 1: self = .untilFirstUnlock
        case 2: self = .complete
        case 3: self = .completeUnlessOpen
        default: return nil
        }
    }
}

/// Whether the user's session is locked, as reported by an injected source (logind's `LockedHint` in
/// production — advisory, a trigger for dropping keys, not a security boundary).
package enum LockState: Sendable, Equatable {
    /// The session is locked (or nobody has logged in since boot).
    case locked
    /// The session is unlocked.
    case unlocked
}

/// Which protection-class keys may be held, as a value-type state machine driven by lock-state reports.
/// It starts as after boot: locked, never unlocked.
package struct ProtectionStateMachine: Sendable, Equatable {
    /// What the key holder must do after a lock-state report.
    package enum Action: Sendable, Equatable {
        /// Derive and hold the key of this class.
        case loadKey(ProtectionClass)
        /// Drop (zero) the key of this class.
        case dropKey(ProtectionClass)
    }

    /// The last reported lock state.
    package private(set) var lockState: LockState = .locked
    /// Whether the session was unlocked at least once since the agent started.
    package private(set) var unlockedSinceStart = false

    /// A machine as after boot: locked, never unlocked.
    package init() {}

    /// Whether a file of `protection` may be read now (and written, but `completeUnlessOpen` files can be written
    /// always: only their private key follows this).
    package func isAvailable(_ protection: ProtectionClass) -> Bool {
        switch protection {
        case .none: true
        case .untilFirstUnlock: unlockedSinceStart
        case .complete, .completeUnlessOpen: lockState == .unlocked
        }
    }

    /// Records a lock-state report; returns the keys to load or drop.
    package mutating func report(_ state: LockState) -> [Action] {
        let before = ProtectionClass.allCases.map(isAvailable)
        lockState = state
        if state == .unlocked { unlockedSinceStart = true }
        var actions: [Action] = []
        for (protection, was) in zip(ProtectionClass.allCases, before) {
            let now = isAvailable(protection)
            if now && !was { actions.append(.loadKey(protection)) }
            if was && !now { actions.append(.dropKey(protection)) }
        }
        return actions
    }
}
