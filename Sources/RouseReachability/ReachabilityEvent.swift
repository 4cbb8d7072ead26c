import RouseNetlink

/// What a monitor delivers to subscribers.
public enum ReachabilityEvent: Sendable, Equatable {
    /// A target's result changed (or, on subscribe and when a target is first evaluated, its current
    /// value, with `previous` nil).
    case changed(ReachabilityChange)
    /// The preferred source address toward a target changed while the target stayed reachable: a
    /// SIP client must re-register now.
    case sourceAddressChanged(SourceAddressChange)

    /// The target concerned.
    public var target: ReachabilityTarget {
        switch self {
        case .changed(let change): return change.target
        case .sourceAddressChanged(let change): return change.target
        }
    }
}

/// One change of a target's result.
public struct ReachabilityChange: Sendable, Equatable {
    /// The target.
    public var target: ReachabilityTarget
    /// The new result.
    public var result: ReachabilityResult
    /// The result before; nil for the initial value.
    public var previous: ReachabilityResult?
    /// A human-readable reason ("link down on eth0", "no route to 192.0.2.1", …).
    public var reason: String
    /// When the monitor decided it (wall clock, seconds since 1970).
    public var timestamp: Double
}

/// A change of the preferred source address toward a target.
public struct SourceAddressChange: Sendable, Equatable {
    /// The target.
    public var target: ReachabilityTarget
    /// The source address before.
    public var previous: IPAddress
    /// The source address now.
    public var current: IPAddress
    /// When the monitor decided it (wall clock, seconds since 1970).
    public var timestamp: Double
}
