/// Counters of a monitor, for metrics and the benchmark.
public struct ReachabilityStatistics: Sendable, Equatable {
    /// Netlink messages received on the event socket.
    public var messages = 0
    /// Bursts: drains of the event socket until `EAGAIN`.
    public var bursts = 0
    /// Evaluations of all targets (at most one per burst or command batch).
    public var evaluations = 0
    /// `RTM_GETROUTE` lookups made.
    public var routeLookups = 0
    /// Events delivered (changes and source-address changes), counted once per event.
    public var notifications = 0
    /// `ENOBUFS` overruns seen (each followed by a full re-dump).
    public var overruns = 0
    /// Full dumps of links and addresses (1 at start, plus one per overrun).
    public var dumps = 0
    /// Returns from `poll` (the monitor thread's wake-ups).
    public var wakeups = 0
    /// CPU time used by the monitor thread, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
    public var cpuNanoseconds: UInt64 = 0
    /// Lookups re-asked because the answer contradicted events already received (kernel races).
    public var staleRetries = 0
    /// UDP `connect` probes (the kernel's source choice for an IPv6 destination whose plain lookup failed).
    public var connectProbes = 0
    /// Malformed kernel messages skipped (each followed by a re-dump).
    public var malformedMessages = 0

    /// All zero.
    public init() {}
}
