/// The CPU budget of a handler running in the background (issue 29; iOS: "apps that spend too much time executing
/// in the background can be throttled back by the system or terminated"): `percent` of one core averaged over a
/// window. Over it in a window: throttled (a quota at the budget); at the quota again in the next window while
/// throttled: terminated.
package struct CPUBudget: Sendable, Equatable {
    /// Percent of one core (100 × cores at most); 0: no budget.
    package var percent: Int
    /// The window the usage is averaged over.
    package var window: Duration

    /// A budget.
    package init(percent: Int = 50, window: Duration = .seconds(30)) {
        self.percent = percent
        self.window = window
    }

    /// The CPU time allowed in `elapsed`, in microseconds.
    package func allowedMicroseconds(in elapsed: Duration) -> Int64 {
        let (seconds, attoseconds) = elapsed.components
        let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        return micros * Int64(percent) / 100
    }

    /// The cgroup quota that holds a handler at the budget: microseconds per ``period`` (v2 `cpu.max`, v1
    /// `cpu.cfs_quota_us`), at least the kernel's 1 ms.
    package var quotaMicroseconds: Int64 { max(1_000, Self.periodMicroseconds * Int64(percent) / 100) }

    /// The quota's period (the kernel's default, 100 ms).
    package static let periodMicroseconds: Int64 = 100_000

    /// A throttled handler counts as over again when it used this share of the budget (its quota holds it at or
    /// just below 100 %, so "at its quota" is the sign it still wants more).
    package static let throttledOverPercent: Int64 = 75
}

/// One background stay of a handler, measured window by window (a plain value: the agent feeds it usage readings
/// taken when it checks the handler's background time and at the end of each window).
package struct CPUBudgetMeter: Sendable, Equatable {
    /// What a check decided.
    package enum Verdict: Sendable, Equatable {
        /// Within the budget (or the window is not over and the budget not yet spent).
        case within
        /// Over the budget: set the quota.
        case throttle(quotaMicroseconds: Int64, periodMicroseconds: Int64, usedMicroseconds: Int64)
        /// Over again while throttled: terminate.
        case terminate(usedMicroseconds: Int64)
    }

    /// The budget.
    package let budget: CPUBudget
    /// When the current window started.
    package private(set) var windowStart: Duration
    /// The usage reading at its start (cumulative microseconds).
    package private(set) var usageAtStart: Int64
    /// The quota is set.
    package private(set) var throttled = false

    /// A meter starting its first window at `now` with the cumulative usage `usage` (microseconds).
    package init(budget: CPUBudget, now: Duration, usage: Int64) {
        self.budget = budget
        windowStart = now
        usageAtStart = usage
    }

    /// When the current window ends (the agent's extra check).
    package var windowEnd: Duration { windowStart + budget.window }

    /// A reading at `now`: at or after the window's end, the window is judged on its length; before it, only a
    /// window's whole budget already spent counts. A judged window starts the next one.
    package mutating func check(now: Duration, usage: Int64) -> Verdict {
        let used = max(0, usage - usageAtStart)
        let elapsed = now - windowStart
        let ended = elapsed >= budget.window
        var allowed = budget.allowedMicroseconds(in: ended ? elapsed : budget.window)
        if throttled { allowed = allowed * CPUBudget.throttledOverPercent / 100 }
        let over = budget.percent > 0 && used > allowed
        guard ended || over else { return .within }
        windowStart = now
        usageAtStart = max(usage, usageAtStart)
        guard over else { return .within }
        if throttled { return .terminate(usedMicroseconds: used) }
        throttled = true
        return .throttle(
            quotaMicroseconds: budget.quotaMicroseconds, periodMicroseconds: CPUBudget.periodMicroseconds,
            usedMicroseconds: used)
    }
}
