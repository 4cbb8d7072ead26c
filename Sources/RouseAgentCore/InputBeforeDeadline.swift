/// A handler's deadlines are enforced after what it wrote before them: when the rules' timer finds a deadline due
/// while the handler's input is still on its way to the agent (bytes in its socket, a frame decoded and not yet
/// handled), the handler's rules wait for that input, rechecking every ``recheck``, for at most ``grace``.
///
/// Without it a report written in time could lose to the deadline it answers: the agent's reader thread and its timer
/// reach the agent's actor in either order, and on a loaded machine (a phone at full CPU) the timer can come first.
/// The bound keeps a handler that never stops writing from putting its deadlines off.
package struct InputBeforeDeadline: Sendable, Equatable {
    /// How long a due deadline waits for input at most.
    package static let grace: Duration = .seconds(2)
    /// How soon a held handler's rules look again.
    package static let recheck: Duration = .milliseconds(20)

    /// When the rules started waiting; nil while they do not wait. The wait lasts while every look finds a deadline
    /// due and input on its way; a look that finds neither ends it, and the next wait has a grace of its own. (Not
    /// tied to one deadline's value: a deadline the rules compute from "now", such as a refilled background budget's,
    /// would start a new grace at every look.)
    package private(set) var heldSince: Duration?

    /// No wait.
    package init() {}

    /// Whether the handler's rules wait at `now`, with its earliest deadline `deadline` and its input `inputWaiting`:
    /// true while a due deadline has input to wait for and the wait's grace is not spent.
    package mutating func holds(deadline: Duration?, inputWaiting: Bool, now: Duration) -> Bool {
        guard let deadline, deadline <= now, inputWaiting else {
            heldSince = nil
            return false
        }
        guard let since = heldSince else {
            heldSince = now
            return true
        }
        if now - since < Self.grace { return true }
        heldSince = nil
        return false
    }

    /// When the rules' timer should look at the handler again, its earliest deadline being `deadline`: while the rules
    /// wait, within ``recheck`` (and at the grace's end at the latest), whatever the deadline, so that a look ends
    /// the wait once the input has arrived.
    package func nextDeadline(_ deadline: Duration?, now: Duration) -> Duration? {
        guard let since = heldSince else { return deadline }
        let look = min(now + Self.recheck, since + Self.grace)
        guard let deadline, deadline > now else { return look }
        return min(deadline, look)
    }
}
