import RouseClock

/// A wall-clock instant in UNIX milliseconds, passed in by callers so that rules never read a clock.
///
/// APNs speaks UNIX time: `iat` and `apns-expiration` in seconds, the 410 `timestamp` in milliseconds.
public struct APNsTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var milliseconds: Int64

    /// An instant from UNIX milliseconds.
    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    /// An instant from UNIX seconds.
    public init(seconds: Int64) {
        self.milliseconds = seconds &* 1000
    }

    /// Whole UNIX seconds (rounded down).
    public var seconds: Int64 {
        let (quotient, remainder) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        return remainder < 0 ? quotient - 1 : quotient
    }

    /// This instant moved by `milliseconds`.
    public func adding(milliseconds delta: Int64) -> APNsTime { APNsTime(milliseconds: milliseconds &+ delta) }

    /// This instant moved by `seconds`.
    public func adding(seconds delta: Int64) -> APNsTime { adding(milliseconds: delta &* 1000) }

    public static func < (lhs: APNsTime, rhs: APNsTime) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// Milliseconds since the epoch.
    public var description: String { "\(milliseconds)ms" }
}

extension APNsTime {
    /// The wall clock now (`CLOCK_REALTIME`). Engines take `now` as a parameter; only I/O shells call this.
    public static func now() -> APNsTime {
        APNsTime(milliseconds: SystemClock().wallMilliseconds)
    }
}
