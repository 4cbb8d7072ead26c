/// Memory pressure (issue 29): iOS's low-memory warning (`applicationDidReceiveMemoryWarning`), sent by the agent to
/// its running handlers when its PSI trigger fires (docs/agent.md, "Memory pressure").
extension AgentEvent {
    /// `memoryWarning`: memory is short; free what can be rebuilt (caches). If the pressure persists, the agent
    /// terminates suspended handlers first, largest first, then running background ones.
    public struct MemoryWarning: Sendable, Equatable, Codable {
        /// The trigger that fired (`some 150000 1000000`: 150 ms of stall in 1 s).
        public var trigger: String?
        /// The handler's own charged memory when the warning was sent (its cgroup's), when known.
        public var memoryBytes: Int64?

        /// The event.
        public init(trigger: String? = nil, memoryBytes: Int64? = nil) {
            self.trigger = trigger
            self.memoryBytes = memoryBytes
        }
    }
}
