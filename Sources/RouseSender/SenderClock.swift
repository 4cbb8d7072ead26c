import RouseAPNs

/// Where the I/O shells read time; tests inject their own.
public protocol SenderClock: Sendable {
    /// Now, on the monotonic and the wall clock.
    func now() -> PoolInstant
}

/// The real clocks: `ContinuousClock` since the clock was made, and `CLOCK_REALTIME`.
public struct SystemSenderClock: SenderClock {
    private let origin = ContinuousClock.now

    /// The system clock.
    public init() {}

    /// Now.
    public func now() -> PoolInstant {
        PoolInstant(monotonic: ContinuousClock.now - origin, wall: .now())
    }
}
