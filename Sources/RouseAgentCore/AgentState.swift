/// The agent's persistent state.
package struct AgentState: Codable, Sendable, Equatable {
    /// Device credential from enrollment (`<deviceID>.<hex>`), nil before enrollment or with certificates.
    package var credential: String?
    /// Device id.
    package var deviceID: String?
    /// Push tokens by topic.
    package var tokens: [String: String] = [:]
    /// Push tokens last handed to each handler (topic → token), to tell "changed".
    package var handedTokens: [String: [String: String]] = [:]
    /// APNs ids recently handed to handlers.
    package var handled = DedupWindow()
    /// Per-handler strike state.
    package var handlers: [String: PersistedHandler] = [:]
    /// The processes the agent launched and that may outlive it (by handler): what a restarted agent needs
    /// to re-attach to them. Absent in state written by older agents.
    package var processes: [String: HandlerIdentity]?
    /// Background-transfer tasks not yet handed back. Absent in state written by older agents.
    package var transfers: [TransferRecord]?
    /// Local notifications the handlers scheduled, not yet fired. Absent in state written by older agents.
    package var localNotifications: LocalNotificationBook?
    /// The UnifiedPush distributor's registrations. Absent in state written by older agents.
    package var unifiedPush: UnifiedPushBook?

    /// Empty state.
    package init() {}
}

/// What survives a restart of one handler's rules.
package struct PersistedHandler: Codable, Sendable, Equatable {
    /// Number of strikes inside the window at save time.
    package var strikes: Int
    /// When each of those strikes happened (UNIX milliseconds, oldest first), so that their window keeps
    /// running across a restart. Absent in state written by older agents: the strikes then restart their
    /// window at load time.
    package var strikeTimes: [Int64]?
    /// VoIP launches stopped.
    package var voipBlocked: Bool
    /// The user stopped it.
    package var userStopped: Bool

    /// A record.
    package init(strikes: Int, voipBlocked: Bool, userStopped: Bool, strikeTimes: [Int64]? = nil) {
        self.strikes = strikes
        self.strikeTimes = strikeTimes
        self.voipBlocked = voipBlocked
        self.userStopped = userStopped
    }
}

/// Who a launched handler process is, beyond its pid (which the kernel recycles): its start time (field 22
/// of `/proc/<pid>/stat`, clock ticks since boot), its executable and its cgroup. A restarted agent adopts
/// a process only when all of them still match.
package struct HandlerIdentity: Codable, Sendable, Equatable {
    /// Process id.
    package var pid: Int32
    /// Start time in clock ticks since boot.
    package var startTime: UInt64
    /// `/proc/<pid>/exe` at launch.
    package var executable: String
    /// Its cgroup directory, if any.
    package var cgroup: String?

    /// An identity.
    package init(pid: Int32, startTime: UInt64, executable: String, cgroup: String?) {
        self.pid = pid
        self.startTime = startTime
        self.executable = executable
        self.cgroup = cgroup
    }
}
