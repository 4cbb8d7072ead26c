import Glibc
import Synchronization

/// An instant on a ``RouseClock``: monotonic time since the clock's origin.
///
/// Only differences between two instants of the same clock mean anything. A ``ManualClock`` starts at zero; the
/// ``SystemClock`` at `CLOCK_MONOTONIC`'s origin (the machine's boot, not counting suspend).
public struct RouseInstant: InstantProtocol, Sendable, Hashable, CustomStringConvertible {
    /// Time since the clock's origin.
    public var offset: Duration

    /// The instant `offset` after the clock's origin.
    public init(offset: Duration) {
        self.offset = offset
    }

    /// The instant `duration` later.
    public func advanced(by duration: Duration) -> RouseInstant { RouseInstant(offset: offset + duration) }

    /// The time from this instant to `other`.
    public func duration(to other: RouseInstant) -> Duration { other.offset - offset }

    public static func < (lhs: RouseInstant, rhs: RouseInstant) -> Bool { lhs.offset < rhs.offset }

    /// Whole nanoseconds since the origin (0 before it): the unit the event loop's timer heap keeps.
    public var nanoseconds: UInt64 { offset.wholeNanoseconds }

    public var description: String { "\(offset)" }
}

/// The one clock every timer and every "now" in Rouse reads: the sender's pool, the HTTP/2 kernel's timers and idle
/// limits, the gateway's expirations and the agent's deadlines. Shells take one at construction; tests pass a
/// ``ManualClock`` and prove that nothing happens by advancing it rather than by sleeping real time.
///
/// It is a Swift `Clock`, so `try await clock.sleep(for:)` sleeps on it; and it reads the wall clock, which APNs
/// speaks (`apns-expiration`, JWT `iat`, the 410 timestamp) and which state on disk keeps across restarts.
public protocol RouseClock: Clock, Sendable where Instant == RouseInstant {
    /// The wall clock now, in UNIX milliseconds.
    var wallMilliseconds: Int64 { get }

    /// The wall clock now, in UNIX microseconds (event timestamps that keep sub-millisecond order).
    var wallMicroseconds: Int64 { get }

    /// Calls `body` whenever time moves other than by itself passing — a ``ManualClock`` advanced by a test — so a
    /// loop that sleeps in `epoll_wait` until its next timer can look again. The ``SystemClock`` never calls it.
    func whenAdvanced(_ body: @escaping @Sendable () -> Void)
}

extension RouseClock {
    /// The instant `duration` from now.
    public func deadline(after duration: Duration) -> RouseInstant { now.advanced(by: duration) }

    /// ``wallMilliseconds`` in microseconds, for a clock that keeps no finer wall time.
    public var wallMicroseconds: Int64 { wallMilliseconds &* 1000 }
}

/// The machine's clocks: `CLOCK_MONOTONIC` and `CLOCK_REALTIME`. Sleeping goes through `Task.sleep`, so it runs on
/// whatever executor the task has (the daemons' epoll loop included) and wakes nothing else.
public struct SystemClock: RouseClock {
    /// The machine's clocks.
    public init() {}

    public var now: RouseInstant {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return RouseInstant(offset: .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec))
    }

    public var minimumResolution: Duration { .nanoseconds(1) }

    public var wallMilliseconds: Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) &* 1000 &+ Int64(spec.tv_nsec) / 1_000_000
    }

    public var wallMicroseconds: Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) &* 1_000_000 &+ Int64(spec.tv_nsec) / 1000
    }

    public func sleep(until deadline: RouseInstant, tolerance: Duration? = nil) async throws {
        let delay = now.duration(to: deadline)
        if delay > .zero {
            try await Task.sleep(for: delay, tolerance: tolerance)
        } else {
            try Task.checkCancellation()
        }
    }

    public func whenAdvanced(_ body: @escaping @Sendable () -> Void) {}
}

/// A clock that moves only when a test says so. Sleepers wake, in deadline order, as ``advance(by:)`` passes their
/// deadlines; a cancelled sleeper throws `CancellationError` at once, as `Task.sleep` does.
public final class ManualClock: RouseClock {
    private struct Sleeper {
        let id: UInt64
        let deadline: RouseInstant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = RouseInstant(offset: .zero)
        /// The wall clock in nanoseconds, so that advances shorter than a millisecond add up.
        var wallNanoseconds: Int64
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var observers: [@Sendable () -> Void] = []
    }

    private let state: Mutex<State>

    /// A clock at monotonic zero and the given wall time (UNIX milliseconds).
    public init(wallMilliseconds: Int64 = 1_700_000_000_000) {
        state = Mutex(State(wallNanoseconds: wallMilliseconds &* 1_000_000))
    }

    public var now: RouseInstant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .nanoseconds(1) }

    public var wallMilliseconds: Int64 { state.withLock { $0.wallNanoseconds / 1_000_000 } }

    public var wallMicroseconds: Int64 { state.withLock { $0.wallNanoseconds / 1000 } }

    /// How many tasks sleep on this clock now: a test waits for the code under test to reach its sleep before it
    /// advances the clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Moves both clocks forward by `duration`, wakes every sleeper whose deadline has come, then tells the
    /// observers (``whenAdvanced(_:)``).
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a clock does not go back")
        let (due, observers) = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            state.wallNanoseconds &+= Int64(duration.wholeNanoseconds)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return (due, state.observers)
        }
        for sleeper in due { sleeper.continuation.resume() }
        for observer in observers { observer() }
    }

    /// Sets the wall clock alone (a clock step, as NTP makes), leaving monotonic time where it is.
    public func setWall(milliseconds: Int64) {
        let observers = state.withLock { state in
            state.wallNanoseconds = milliseconds &* 1_000_000
            return state.observers
        }
        for observer in observers { observer() }
    }

    public func sleep(until deadline: RouseInstant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    public func whenAdvanced(_ body: @escaping @Sendable () -> Void) {
        state.withLock { $0.observers.append(body) }
    }
}

/// The conversions from `Duration` every part needs, in one place (the standard library has only `components`).
extension Duration {
    /// The duration in seconds, fractions included.
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// The duration in milliseconds, fractions included.
    public var inMilliseconds: Double { Double(components.seconds) * 1e3 + Double(components.attoseconds) / 1e15 }

    /// The duration in microseconds, fractions included.
    public var inMicroseconds: Double { Double(components.seconds) * 1e6 + Double(components.attoseconds) / 1e12 }

    /// The duration in whole milliseconds, rounded toward zero (negative durations stay negative).
    public var wholeMilliseconds: Int64 {
        components.seconds &* 1000 &+ components.attoseconds / 1_000_000_000_000_000
    }

    /// The duration in whole nanoseconds, 0 when it is not positive (a deadline already past).
    public var wholeNanoseconds: UInt64 {
        // -0.5 s is (0 s, -5e17 as): the seconds alone cannot tell, hence the comparison first.
        guard self > .zero else { return 0 }
        let (seconds, attoseconds) = components
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}
