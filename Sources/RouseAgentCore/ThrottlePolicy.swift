/// CPU and I/O weights by state (issue 29; iOS: "apps that spend too much time executing in the background can be throttled
/// back by the system"): a background or suspended handler competes with a foreground one or a call on unequal terms.
package enum ThrottlePolicy {
    /// The cgroup v2 `cpu.weight` (1 to 10000, 100 the kernel's default) of a handler in `lifecycle`: foreground ones
    /// and calls 100, running background ones 50, suspended ones 10 (they run nothing while frozen; the low weight
    /// holds in the moment they thaw).
    package static func cpuWeight(_ lifecycle: HandlerLifecycle, protected: Bool) -> Int {
        if protected { return 100 }
        switch lifecycle {
        case .active, .inactive, .notRunning: return 100
        case .background, .launching: return 50
        case .suspended: return 10
        }
    }

    /// The I/O weight of a handler in `lifecycle` (BFQ's `io.bfq.weight`/`blkio.bfq.weight`, 1 to 1000, and v2
    /// `io.weight`, 1 to 10000; 100 is the default of each): the CPU weight's values, so a background handler's disk
    /// work yields to a call's as its CPU does.
    package static func ioWeight(_ lifecycle: HandlerLifecycle, protected: Bool) -> Int {
        min(cpuWeight(lifecycle, protected: protected), 1000)
    }

    /// The cgroup v1 `cpu.shares` for a v2 weight (1024 is the default, as 100 is).
    package static func cpuShares(weight: Int) -> Int { max(2, weight * 1024 / 100) }
}
