/// A PSI trigger as the kernel takes it (`some 150000 1000000`: tasks stalled on memory for 150 ms in any 1 s window),
/// parsed and checked before the agent writes it (Documentation/accounting/psi.rst).
package struct MemoryPressureTrigger: Sendable, Equatable, CustomStringConvertible {
    /// `some`: at least one task stalled; `full`: all non-idle tasks stalled at once.
    package enum Kind: String, Sendable { case some, full }

    /// Which stall counts.
    package var kind: Kind
    /// Stall time in the window that fires it, in microseconds.
    package var stallMicroseconds: Int64
    /// The window, in microseconds (the kernel takes 500 ms to 10 s).
    package var windowMicroseconds: Int64

    /// The agent's default: 300 ms of `some` stall in 2 s (15 %). The window is a multiple of 2 s: a process without
    /// CAP_SYS_RESOURCE (a per-user agent, or root in a container without it) may only set such windows
    /// (EINVAL otherwise, kernel 6.5 and later).
    package static let standard = MemoryPressureTrigger(
        kind: .some, stallMicroseconds: 300_000, windowMicroseconds: 2_000_000)

    /// A trigger.
    package init(kind: Kind, stallMicroseconds: Int64, windowMicroseconds: Int64) {
        self.kind = kind
        self.stallMicroseconds = stallMicroseconds
        self.windowMicroseconds = windowMicroseconds
    }

    /// Parses `some|full STALL_US WINDOW_US`; nil with the reason in `problem`.
    package static func parse(_ text: String) -> Result<MemoryPressureTrigger, MemoryPressureTriggerError> {
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        guard words.count == 3 else { return .failure(.init("expected 'some|full STALL_US WINDOW_US', got '\(text)'")) }
        guard let kind = Kind(rawValue: String(words[0])) else {
            return .failure(.init("the kind must be 'some' or 'full', not '\(words[0])'"))
        }
        guard let stall = Int64(words[1]), let window = Int64(words[2]) else {
            return .failure(.init("stall and window must be whole microseconds: '\(text)'"))
        }
        guard (500_000...10_000_000).contains(window) else {
            return .failure(.init("the window must be 500000 to 10000000 µs (the kernel's bounds), not \(window)"))
        }
        guard stall > 0, stall <= window else {
            return .failure(.init("the stall must be more than 0 and at most the window (\(window) µs), not \(stall)"))
        }
        return .success(MemoryPressureTrigger(kind: kind, stallMicroseconds: stall, windowMicroseconds: window))
    }

    /// What is written to the pressure file.
    package var description: String { "\(kind.rawValue) \(stallMicroseconds) \(windowMicroseconds)" }
}

/// Why a trigger text was refused.
package struct MemoryPressureTriggerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reason.
    package var description: String
    init(_ description: String) { self.description = description }
}

/// One memory-pressure episode at a time: the first trigger warns the running handlers; pressure that persists (the
/// trigger fires again, or the stall counter still grows at the trigger's rate when the check comes `persistAfter`
/// later) terminates the next handler in ``MemoryPressurePolicy/order(_:)``, one per step, until a check finds the
/// stall below the rate. No timer runs outside an episode: without pressure the agent never wakes for memory.
package struct MemoryPressureMachine: Sendable {
    /// What the agent does.
    package enum Action: Sendable, Equatable {
        /// Send `memoryWarning` to the running handlers.
        case warn
        /// Terminate the next handler in the policy's order.
        case terminateNext
        /// The episode ended: pressure gone `after` its first trigger.
        case relieved(after: Duration)
    }

    /// The trigger (its rate is what "still above" means at a check).
    package let trigger: MemoryPressureTrigger
    /// How long after a trigger (or a termination) the agent looks again.
    package let persistAfter: Duration
    /// The episode under way: when its first trigger fired.
    package private(set) var episodeStart: Duration?
    /// When the agent must call ``check(now:stallMicroseconds:)`` (nil outside an episode).
    package private(set) var nextCheck: Duration?
    /// Episodes begun.
    package private(set) var episodes = 0
    /// Terminations asked for.
    package private(set) var terminations = 0
    /// How long the last episode lasted.
    package private(set) var lastRelief: Duration?
    private var sample: (at: Duration, stall: Int64)?

    /// A machine with no episode.
    package init(trigger: MemoryPressureTrigger, persistAfter: Duration) {
        self.trigger = trigger
        self.persistAfter = persistAfter
    }

    /// The trigger fired; `stallMicroseconds`: the stall counter (`total` of the trigger's kind) now.
    package mutating func fired(now: Duration, stallMicroseconds: Int64) -> [Action] {
        sample = (now, stallMicroseconds)
        nextCheck = now + persistAfter
        guard episodeStart != nil else {
            episodeStart = now
            episodes += 1
            return [.warn]
        }
        // A second trigger in the episode: the pressure persists.
        terminations += 1
        return [.terminateNext]
    }

    /// The check came (at or after ``nextCheck``): still above the trigger's rate since the last sample → the next
    /// termination; below → the episode ends.
    package mutating func check(now: Duration, stallMicroseconds: Int64) -> [Action] {
        guard let due = nextCheck, due <= now, let start = episodeStart, let sample else { return [] }
        let elapsed = now - sample.at
        let elapsedMicros = elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
        let rate = Double(trigger.stallMicroseconds) / Double(trigger.windowMicroseconds)
        let stalled = stallMicroseconds - sample.stall
        if elapsedMicros > 0, Double(stalled) >= rate * Double(elapsedMicros) {
            self.sample = (now, stallMicroseconds)
            nextCheck = now + persistAfter
            terminations += 1
            return [.terminateNext]
        }
        episodeStart = nil
        nextCheck = nil
        self.sample = nil
        lastRelief = now - start
        return [.relieved(after: now - start)]
    }
}
