import RouseClock

/// The termination of one handler as a value-type state machine (iOS's `applicationWillTerminate`): a running,
/// connected handler gets a `willTerminate` notice and ``HandlerRules/terminationGrace`` to exit by itself before it
/// is killed; a frozen one (iOS purges suspended apps "without notice"), one that cannot be told (no connection yet)
/// and every handler at a system shutdown are killed at once. Inputs carry the monotonic `now`; nothing here touches
/// a process, a socket or a clock.
package struct HandlerTermination: Sendable, Equatable {
    /// What the I/O shell must do.
    package enum Action: Sendable, Equatable {
        /// Send `willTerminate` (`reason`, `seconds` of grace).
        case notify(TerminationReason, seconds: Double)
        /// Kill the handler's process group (cgroup) now.
        case kill(TerminationReason)
        /// Record a rule event (constant message, values in metadata).
        case log(String, [String: String])
    }

    /// The termination under way: why, and when the kill comes; nil when none.
    package private(set) var pending: (reason: TerminationReason, deadline: Duration)?

    /// No termination under way.
    package init() {}

    /// Whether a notice is under way (the handler must not be frozen meanwhile: it could not exit).
    package var isPending: Bool { pending != nil }

    /// The agent stops the handler for `reason`: a notice and the grace when the handler runs (not frozen), is
    /// `connected` and the reason gives one; otherwise a kill now. A second stop while one is under way keeps the
    /// first deadline (a stop never extends a grace), except one that gives no notice, which kills now.
    package mutating func begin(
        reason: TerminationReason, lifecycle: HandlerLifecycle, connected: Bool, grace: Duration, now: Duration
    ) -> [Action] {
        let notice =
            reason.givesNotice && connected && lifecycle.isRunning && lifecycle != .suspended
            && grace > .zero
        if pending != nil {
            guard !notice else { return [] }
            self.pending = nil
            return [.kill(reason)]
        }
        guard notice else { return [.kill(reason)] }
        pending = (reason, now + grace)
        return [.notify(reason, seconds: grace.inSeconds)]
    }

    /// Timers: the grace has passed without an exit ⇒ the kill.
    package mutating func tick(now: Duration) -> [Action] {
        guard let pending, pending.deadline <= now else { return [] }
        self.pending = nil
        return [
            .log("no exit within the termination grace: killing", ["reason": pending.reason.rawValue]),
            .kill(pending.reason),
        ]
    }

    /// The process exited (by itself or killed): nothing more to do. Returns whether it left within a grace.
    package mutating func exited() -> Bool {
        defer { pending = nil }
        return pending != nil
    }

    /// When ``tick(now:)`` must next run, or nil.
    package var nextDeadline: Duration? { pending?.deadline }

    /// Same termination under way (or none).
    package static func == (lhs: HandlerTermination, rhs: HandlerTermination) -> Bool {
        lhs.pending?.reason == rhs.pending?.reason && lhs.pending?.deadline == rhs.pending?.deadline
    }
}
