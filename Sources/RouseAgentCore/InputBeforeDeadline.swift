/// A handler's deadlines are enforced after what it wrote before them: when the rules' timer finds a deadline due
/// while the handler's input is still on its way to the agent (bytes in its socket, a frame decoded and not yet
/// handled), the handler's rules wait for that input, rechecking every ``recheck``, for at most ``grace``.
///
/// Without it a report written in time could lose to the deadline it answers: the agent's reader thread and its timer
/// reach the agent's actor in either order, and on a loaded machine (a phone at full CPU) the timer can come first.
/// The bound keeps a handler that never stops writing from putting its deadlines off.
public struct InputBeforeDeadline: Sendable, Equatable {
    /// How long a due deadline waits for input at most.
    public static let grace: Duration = .seconds(2)
    /// How soon a held handler's rules look again.
    public static let recheck: Duration = .milliseconds(20)

    /// The due deadline the rules wait at and when they started waiting; nil while they do not wait. A different
    /// deadline (the first was answered, another came due) starts its own grace.
    public private(set) var held: (deadline: Duration, since: Duration)?

    /// No wait.
    public init() {}

    /// Whether the handler's rules wait at `now`, with its earliest deadline `deadline` and its input `inputWaiting`:
    /// true while a due deadline has input to wait for and its grace is not spent.
    public mutating func holds(deadline: Duration?, inputWaiting: Bool, now: Duration) -> Bool {
        guard let deadline, deadline <= now, inputWaiting else {
            held = nil
            return false
        }
        guard let held, held.deadline == deadline else {
            held = (deadline, now)
            return true
        }
        if now - held.since < Self.grace { return true }
        self.held = nil
        return false
    }

    /// When the rules' timer should look at the handler again, its earliest deadline being `deadline`.
    public func nextDeadline(_ deadline: Duration?, now: Duration) -> Duration? {
        guard let deadline, let held, held.deadline == deadline else { return deadline }
        return max(deadline, min(now + Self.recheck, held.since + Self.grace))
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.held?.deadline == rhs.held?.deadline && lhs.held?.since == rhs.held?.since
    }
}
