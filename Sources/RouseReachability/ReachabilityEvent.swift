import RouseNetlink

/// What a monitor delivers to subscribers.
public enum ReachabilityEvent: Sendable, Equatable {
    /// A target's result changed (or, on subscribe and when a target is first evaluated, its current
    /// value, with `previous` nil). `kind` tells a reachability change from a path change (NWPath's new
    /// path: another interface, gateway or source while the status stays the same).
    case changed(ReachabilityChange)
    /// The preferred source address toward a target changed while the target stayed reachable: a
    /// SIP client must re-register now. Delivered right after the `.changed` event (of kind `.path` or
    /// `.reachability`) that carries the same change, for subscribers that act on the source alone.
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
    /// What changed.
    public enum Kind: String, Sendable, Equatable {
        /// The first value of a target (on watch, or replayed to a new subscriber): `previous` is nil.
        case initial
        /// The status or the flags changed (`SCNetworkReachability`'s callback): the target became
        /// usable, unusable, needs a connection, is now direct, …
        case reachability
        /// The status stayed the same (satisfied, or requires a connection) but the path did not: the
        /// egress interface, the gateway or the source address changed (`NWPathMonitor` delivers a new
        /// path). The flags may differ too (a tunnel is transient, a point-to-point route is direct).
        case path
    }

    /// The target.
    public var target: ReachabilityTarget
    /// The new result.
    public var result: ReachabilityResult
    /// The result before; nil for the initial value.
    public var previous: ReachabilityResult?
    /// A human-readable reason ("link down on eth0", "no route to 192.0.2.1", …).
    public var reason: String
    /// When the monitor decided it (wall clock, seconds since 1970, microsecond resolution).
    public var timestamp: Double
    /// What changed.
    public var kind: Kind

    /// Creates a change.
    public init(
        target: ReachabilityTarget, result: ReachabilityResult, previous: ReachabilityResult?, reason: String,
        timestamp: Double, kind: Kind
    ) {
        self.target = target
        self.result = result
        self.previous = previous
        self.reason = reason
        self.timestamp = timestamp
        self.kind = kind
    }
}

/// A monitor's signal about itself, delivered to synchronous handlers between events.
public struct ReachabilityOverflow: Sendable, Equatable {
    /// Overruns so far (`ENOBUFS`: the kernel dropped events because the socket's buffer was full).
    public var overruns: Int
    /// When the monitor finished the re-dump that followed (wall clock, seconds since 1970).
    public var timestamp: Double

    /// Creates an overflow notice.
    public init(overruns: Int, timestamp: Double) {
        self.overruns = overruns
        self.timestamp = timestamp
    }
}

/// What a synchronous handler (`ReachabilityMonitor.addSynchronousHandler`) receives on the monitor
/// thread: every event, and an overflow notice after each `ENOBUFS` re-dump (the changes the re-dump
/// revealed follow as events).
public enum ReachabilityNotice: Sendable, Equatable {
    /// An event, as every subscriber gets it.
    case event(ReachabilityEvent)
    /// The kernel dropped events; the monitor re-dumped links and addresses and re-evaluates every target.
    case overflow(ReachabilityOverflow)
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
