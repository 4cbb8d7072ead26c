import RouseClock

/// Keep-alive wakes of every handler that asked for one (iOS's `setKeepAliveTimeout:handler:`), as one value-type
/// state machine: when each handler's next keep-alive is, and which run together. Nothing here touches a process or a
/// clock: times are the agent's monotonic `now`.
///
/// The rules (docs/voip-sockets.md, "Keep-alive"):
/// - an interval of at least ``minimumInterval`` (600 s, as iOS) and at most ``maximumInterval``;
/// - a keep-alive is never late: it runs at or before `last + interval` (its *due* time), and never earlier than
///   its tolerance, a tenth of the interval, before it (Apple's advice for timer tolerance, and iOS's "may call your
///   handler earlier");
/// - every planned time is floored to a shared grid (``grid``, 60 s from the agent's start), so handlers asking for
///   the same interval at different moments wake together after at most one interval;
/// - whenever one runs (its timer, or any other wake-up of the device), every handler within its tolerance runs with
///   it, and the next due time counts from then: N handlers cost one wake-up per interval, not N.
package struct KeepAliveScheduler: Sendable, Equatable {
    /// The shortest interval (iOS: "The minimum acceptable timeout value is 600 seconds").
    package static let minimumInterval = Duration.seconds(600)
    /// The longest interval accepted (a day).
    package static let maximumInterval = Duration.seconds(86_400)

    /// Why an interval is refused.
    package enum Refusal: Error, Equatable, Sendable {
        /// Below ``minimumInterval``.
        case tooShort
        /// Above ``maximumInterval``.
        case tooLong
        /// Not a number.
        case notANumber
    }

    private struct Entry: Sendable, Equatable {
        var interval: Duration
        /// The latest time of the next keep-alive.
        var due: Duration
    }

    /// The grid planned times are floored to.
    package let grid: Duration
    private var entries: [String: Entry] = [:]

    /// No keep-alives yet; planned times on a grid of `grid`.
    package init(grid: Duration = .seconds(60)) { self.grid = grid }

    /// `seconds` as an interval, or why it is refused.
    package static func interval(seconds: Double) -> Result<Duration, Refusal> {
        guard seconds.isFinite else { return .failure(.notANumber) }
        guard seconds >= minimumInterval.inSeconds else { return .failure(.tooShort) }
        guard seconds <= maximumInterval.inSeconds else { return .failure(.tooLong) }
        return .success(.milliseconds(Int64(seconds * 1000)))
    }

    /// How early a keep-alive of `interval` may run: a tenth of it.
    package static func tolerance(_ interval: Duration) -> Duration { interval / 10 }

    /// Handler `name` is kept alive every `interval` from `now` (replacing what it asked before).
    package mutating func set(_ name: String, interval: Duration, now: Duration) {
        entries[name] = Entry(interval: interval, due: now + interval)
    }

    /// Handler `name` no longer asks for keep-alives.
    package mutating func clear(_ name: String) { entries[name] = nil }

    /// The handlers that ask for keep-alives, by name.
    package var names: [String] { entries.keys.sorted() }

    /// `name`'s interval, nil when it asked for none.
    package func interval(of name: String) -> Duration? { entries[name]?.interval }

    /// `name`'s latest time for its next keep-alive.
    package func due(of name: String) -> Duration? { entries[name]?.due }

    /// When `name`'s timer would wake the device: its due time floored to the grid (never later than due, never
    /// before its tolerance allows: the grid is finer than any tolerance).
    package func planned(of name: String) -> Duration? {
        guard let entry = entries[name] else { return nil }
        let step = grid.wholeMilliseconds
        guard step > 0 else { return entry.due }
        let due = entry.due.wholeMilliseconds
        let floored = due - ((due % step) + step) % step
        return max(entry.due - Self.tolerance(entry.interval), .milliseconds(floored))
    }

    /// The one timer all keep-alives need: the earliest planned time, nil when no handler asks.
    package func nextTimer() -> Duration? { entries.keys.compactMap { planned(of: $0) }.min() }

    /// The handlers whose keep-alive runs at `now`, by name: every one within its tolerance of its due time (the
    /// device is awake anyway, whether for this timer or for anything else).
    package func due(now: Duration) -> [String] {
        entries.keys.sorted().filter { name in
            guard let entry = entries[name] else { return false }
            return now >= entry.due - Self.tolerance(entry.interval)
        }
    }

    /// `name`'s keep-alive ran at `now`: the next is due one interval later.
    package mutating func ran(_ name: String, now: Duration) {
        guard let entry = entries[name] else { return }
        entries[name]?.due = now + entry.interval
    }
}
