import RouseClock

/// Background fetch (iOS's background app refresh) for one handler, as a value-type state machine: when
/// its next fetch opportunity is, given its declared minimum interval, the network, other wake-ups it can share,
/// and its history. Nothing here touches a process or a clock: times are the agent's monotonic `now`.
///
/// The rules (docs/agent.md, "Background fetch"):
/// - never more often than the minimum interval, and only with a usable network (an overdue fetch waits for it);
/// - the preferred time is `last + minimum × factor`; the factor adapts: a fetch that completes quickly with
///   `newData` (and moved bytes) halves it (down to 1), `noData` raises it by a quarter, `failed` doubles it, a
///   fetch that times out or claims `newData` without moving a byte quadruples it (up to ``maxFactor``);
/// - coalescing: another wake-up (a channel reconnect, another handler's fetch, a push) lets a handler fetch early,
///   once past the minimum interval and in the second half of its wait.
package struct FetchScheduler: Sendable, Equatable {
    /// How a fetch ended.
    package enum Outcome: String, Sendable, Codable, Equatable {
        case newData, noData, failed, timedOut
    }

    /// One fetch of the history.
    package struct Entry: Sendable, Codable, Equatable {
        /// When it started (agent monotonic time, seconds).
        package var startedSeconds: Double
        package var outcome: Outcome
        /// How long the handler took (seconds).
        package var seconds: Double
        /// Bytes the handler moved meanwhile (its reads and writes, `/proc/<pid>/io`).
        package var bytes: Int64
        /// The factor it set.
        package var factor: Double
    }

    /// The declared minimum interval.
    package let minimum: Duration
    /// Multiplier of the minimum interval for the preferred time.
    package private(set) var factor: Double = 2
    /// When the last fetch started (nil: never; the first opportunity comes one minimum interval after start).
    package private(set) var last: Duration?
    /// Since when the handler exists for the scheduler (the first fetch is measured from it).
    package private(set) var since: Duration
    /// A fetch is under way (started at this time).
    package private(set) var running: Duration?
    /// The last ``historyLength`` fetches, oldest first.
    package private(set) var history: [Entry] = []

    package static let maxFactor = 16.0
    package static let historyLength = 8
    /// A fetch quicker than this counts as fast.
    package static let fast = Duration.seconds(10)
    /// `newData` with fewer bytes moved than this is not believed.
    package static let honestBytes: Int64 = 1024

    /// A scheduler for a handler declaring `minimum`, known from `now`.
    package init(minimum: Duration, now: Duration) {
        self.minimum = minimum
        self.since = now
    }

    /// The earliest allowed fetch: one minimum interval after the last (or after ``since``).
    package var allowed: Duration { (last ?? since) + minimum }

    /// The preferred fetch time.
    package var preferred: Duration { (last ?? since) + minimum * factor }

    /// The earliest time a coalesced wake-up may fetch: past the minimum, in the second half of the wait.
    package var coalescible: Duration { max(allowed, preferred - (preferred - allowed) / 2) }

    /// When the agent's timer must next look at this handler (nil: a fetch runs, or the network is down).
    package func nextTimer(networkUsable: Bool) -> Duration? {
        guard networkUsable, running == nil else { return nil }
        return preferred
    }

    /// Whether the handler should fetch now: its preferred time came (`wakeUp`: or, when something else woke the
    /// device, its coalescible time came), the network is usable and no fetch runs.
    package func due(now: Duration, networkUsable: Bool, wakeUp: Bool) -> Bool {
        guard networkUsable, running == nil else { return false }
        return now >= (wakeUp ? coalescible : preferred)
    }

    /// The fetch starts.
    package mutating func started(now: Duration) {
        running = now
        last = now
    }

    /// The opportunity passed without a fetch (the user stopped the handler): the next one is an interval away.
    package mutating func skipped(now: Duration) {
        last = now
    }

    /// The fetch ended: `outcome`, the bytes the handler moved meanwhile. Returns the new factor.
    @discardableResult
    package mutating func ended(_ outcome: Outcome, bytes: Int64, now: Duration) -> Double {
        guard let start = running else { return factor }
        running = nil
        let took = now - start
        switch outcome {
        case .newData where bytes < Self.honestBytes: factor *= 4
        case .newData where took <= Self.fast: factor /= 2
        case .newData: break
        case .noData: factor *= 1.25
        case .failed: factor *= 2
        case .timedOut: factor *= 4
        }
        factor = min(Self.maxFactor, max(1, factor))
        history.append(
            Entry(
                startedSeconds: Self.seconds(start), outcome: outcome, seconds: Self.seconds(took), bytes: bytes,
                factor: factor))
        if history.count > Self.historyLength { history.removeFirst(history.count - Self.historyLength) }
        return factor
    }

    package static func seconds(_ duration: Duration) -> Double { duration.inSeconds }
}
