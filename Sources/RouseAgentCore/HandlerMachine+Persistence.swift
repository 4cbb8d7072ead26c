import RouseClock

extension HandlerMachine {
    /// Restores what was persisted. `wallEpochMilliseconds` is the UNIX time (milliseconds) at which this
    /// machine's monotonic clock reads zero: persisted strike times are mapped onto it, so a strike window
    /// keeps running across a restart (strikes expired meanwhile are dropped; times in the future, after a
    /// wall-clock step backwards, count as now). State without strike times restarts the window at `now`.
    package mutating func restore(_ persisted: PersistedHandler, now: Duration, wallEpochMilliseconds: Int64) {
        let times: [Duration]
        if let persistedTimes = persisted.strikeTimes {
            times = persistedTimes.sorted().map { time in
                let (offset, overflow) = time.subtractingReportingOverflow(wallEpochMilliseconds)
                return overflow ? .zero : min(now, .milliseconds(offset))
            }
        } else {
            times = Array(repeating: now, count: min(max(0, persisted.strikes), rules.strikeLimit))
        }
        strikeRecord.restore(times: times, blocked: persisted.voipBlocked)
        strikeRecord.expire(now: now, window: rules.strikeWindow)
        userStopped = persisted.userStopped
    }

    /// What to persist; strike times as UNIX milliseconds given the wall time at monotonic zero.
    package func persisted(wallEpochMilliseconds: Int64) -> PersistedHandler {
        PersistedHandler(
            strikes: strikes.count, voipBlocked: voipBlocked, userStopped: userStopped,
            strikeTimes: strikes.map { wallEpochMilliseconds + milliseconds($0) })
    }

    private func milliseconds(_ duration: Duration) -> Int64 { duration.wholeMilliseconds }
}

extension HandlerMachine {
    /// What the agent preserves of a handler's rules and lifecycle (purgeable: strikes live in the durable
    /// store too). Restored at the agent's next launch.
    package struct Snapshot: Codable, Sendable, Equatable {
        /// Lifecycle state at preservation.
        package var lifecycle: HandlerLifecycle
        /// The held (throttled) background push.
        package var held: AgentPush?
        /// Background-push tokens left.
        package var tokens: Double
        /// Strike times (UNIX milliseconds).
        package var strikeTimes: [Int64]
        /// Open background tasks by token.
        package var tasks: [Int: String]
        /// Background-task budget used so far (seconds), nil when not in the background.
        package var budgetUsedSeconds: Double?
        /// Calls in progress.
        package var activeCalls: [String]
    }

    /// The snapshot to preserve.
    package func snapshot(now: Duration, wallEpochMilliseconds: Int64) -> Snapshot {
        Snapshot(
            lifecycle: lifecycle, held: held, tokens: refilled(now: now),
            strikeTimes: strikes.map { wallEpochMilliseconds + milliseconds($0) },
            tasks: tasks, budgetUsedSeconds: backgroundSince.map { seconds(now - $0) },
            activeCalls: activeCalls.sorted())
    }

    /// Restores a snapshot: the held push and the token bucket always; calls, tasks and the budget used
    /// only when the handler process is still running (re-attached), as they belong to that process.
    package mutating func restore(_ snapshot: Snapshot, now: Duration, running: Bool) {
        if held == nil { held = snapshot.held }
        bucket.restore(tokens: snapshot.tokens, now: now, burst: rules.backgroundBurst)
        guard running else { return }
        activeCalls = Set(snapshot.activeCalls)
        let used = snapshot.budgetUsedSeconds.map { used in
            // Nothing read back from a file may trap: a non-finite or out-of-range value counts as the whole budget.
            guard used.isFinite, used >= 0, used <= seconds(rules.taskBudget) else { return rules.taskBudget }
            return Duration.milliseconds(Int64(used * 1000))
        }
        backgroundTime.restore(tasks: snapshot.tasks, used: used)
    }
}
