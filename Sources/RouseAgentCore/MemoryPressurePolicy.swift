/// Who goes when memory runs short (issue 29; iOS App Programming Guide: "suspended apps are purged first, and no
/// notice is given"; "apps with large memory footprints are the first to be terminated"; a running background app
/// gets `applicationWillTerminate` first). A plain function of what the agent knows of each handler at the moment
/// pressure persists: nothing here reads a cgroup or kills a process.
package enum MemoryPressurePolicy {
    /// What the agent knows of one handler when it must free memory.
    package struct Candidate: Sendable, Equatable {
        /// The handler's name.
        package var name: String
        /// Its lifecycle state.
        package var lifecycle: HandlerLifecycle
        /// Its cgroup's charged memory (`memory.current`, v1 `memory.usage_in_bytes`); nil when unknown (it then
        /// counts as the smallest).
        package var memoryBytes: Int64?
        /// It is in a call, owes a call report, or holds a call or playback session (an activation that keeps it
        /// running): never terminated for memory.
        package var protected: Bool

        /// A candidate.
        package init(name: String, lifecycle: HandlerLifecycle, memoryBytes: Int64?, protected: Bool) {
            self.name = name
            self.lifecycle = lifecycle
            self.memoryBytes = memoryBytes
            self.protected = protected
        }
    }

    /// One handler to terminate, and how.
    package struct Victim: Sendable, Equatable {
        /// The handler's name.
        package var name: String
        /// Whether it runs (background, launching) and so goes through the agent's stop path (which gives running
        /// handlers their termination notice); false: frozen, killed without notice.
        package var running: Bool
        /// Its footprint when chosen (for the log).
        package var memoryBytes: Int64?

        /// A victim.
        package init(name: String, running: Bool, memoryBytes: Int64?) {
            self.name = name
            self.running = running
            self.memoryBytes = memoryBytes
        }
    }

    /// The termination order: suspended (frozen) handlers first, largest footprint first; then running background
    /// handlers (including one still launching), largest first. Never a foreground handler, never a protected one
    /// (a call, a call or playback session), never one that is not running. Ties keep the names' order, so the
    /// order is the same every time.
    package static func order(_ candidates: [Candidate]) -> [Victim] {
        func tier(_ lifecycle: HandlerLifecycle) -> Int? {
            switch lifecycle {
            case .suspended: return 0
            case .background, .launching: return 1
            case .active, .inactive, .notRunning: return nil
            }
        }
        let eligible = candidates.compactMap { candidate -> (Int, Candidate)? in
            guard !candidate.protected, let tier = tier(candidate.lifecycle) else { return nil }
            return (tier, candidate)
        }
        let sorted = eligible.sorted { left, right in
            if left.0 != right.0 { return left.0 < right.0 }
            let leftBytes = left.1.memoryBytes ?? -1
            let rightBytes = right.1.memoryBytes ?? -1
            if leftBytes != rightBytes { return leftBytes > rightBytes }
            return left.1.name < right.1.name
        }
        return sorted.map { Victim(name: $0.1.name, running: $0.0 == 1, memoryBytes: $0.1.memoryBytes) }
    }

    /// The `oom_score_adj` a handler's processes get in `lifecycle` (the agent's unit runs at -500): frozen ones are
    /// the kernel OOM killer's first choice, running background ones next, foreground ones and calls as any program.
    package static func oomScoreAdjust(_ lifecycle: HandlerLifecycle, protected: Bool) -> Int {
        if protected { return 0 }
        switch lifecycle {
        case .suspended: return 500
        case .background, .launching: return 300
        case .active, .inactive, .notRunning: return 0
        }
    }
}
