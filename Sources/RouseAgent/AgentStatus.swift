import FoundationEssentials
import RouseAgentCore

/// The status document (`rouse agent status --json`).
package struct AgentStatus: Codable, Sendable {
    /// One handler's state.
    package struct Handler: Codable, Sendable {
        /// Handler name (its file stem).
        package var name: String
        /// Bundle id.
        package var topic: String
        /// Lifecycle state (`notRunning`, `launching`, `background`, `suspended`, `active`, `inactive`).
        package var state: String
        /// Process id while running.
        package var pid: Int32?
        /// Whether it is registered over IPC.
        package var connected: Bool
        /// Missed VoIP reports inside the strike window.
        package var strikes: Int
        /// VoIP launches stopped until registered again.
        package var voipBlocked: Bool
        /// Stopped by the user: no background launches.
        package var userStopped: Bool
        /// VoIP pushes waiting for a call report.
        package var owedReports: [String]
        /// Background pushes waiting for completion.
        package var openBackgroundPushes: [String]
        /// Open background tasks, by name.
        package var tasks: [String]
        /// Background-task budget left (nil in the foreground or not running).
        package var budgetRemainingSeconds: Double?
        /// Background-push tokens available.
        package var backgroundTokens: Double
        /// The held (throttled) background push.
        package var heldPush: String?
        /// It holds a call or background-capable audio session: it is not suspended.
        package var holdsAudio: Bool
        /// Why its last launch was refused (who it would run as, or an executable others may write), if it was.
        package var launchRefused: String? = nil
        /// Background fetch: the next planned one and the history that set it (nil: the handler does not fetch).
        package var fetch: Fetch? = nil
        /// Watched VoIP sockets and keep-alive (nil: neither; docs/voip-sockets.md).
        package var voip: VoIP? = nil
        /// While frozen: the listening sockets it kept (`listening-sockets = "report"`; nil: none).
        package var listeningSockets: [String]? = nil
        /// Its cgroup's charged memory in bytes (`memory.current`, v1 `memory.usage_in_bytes`); nil when not running
        /// or not known.
        package var memoryBytes: Int64? = nil
    }

    /// A handler's background-fetch plan.
    package struct Fetch: Codable, Sendable {
        /// Its declared minimum interval.
        package var minimumSeconds: Double
        /// The multiplier its history set (1 to 16).
        package var factor: Double
        /// Seconds to its preferred fetch (nil while the network is unusable: no fetch is planned).
        package var nextInSeconds: Double?
        /// The fetch under way.
        package var running: String?
        /// The last fetches.
        package var history: [FetchScheduler.Entry]
    }

    /// Device channel state.
    package var channel: String
    /// Gateway reachability.
    package var gatewayReachable: Bool
    /// Enrolled device id.
    package var deviceID: String?
    /// `cgroup-v2`, `cgroup-v1-freezer` or `SIGSTOP`.
    package var suspendMechanism: String
    /// Where the handler cgroups are, or why none is used.
    package var suspendNote: String
    /// Where handlers' `tasks-max` and `memory-max-mib` are enforced: `cgroup-v2`, `cgroup-v1` or `none`
    /// (``LimitMechanism``).
    package var limits: String? = nil
    /// Where the limits are written, or why they cannot be.
    package var limitsNote: String? = nil
    /// Handlers, by name.
    package var handlers: [Handler]
    /// Push tokens by topic (public values: the gateway hands them to providers).
    package var tokens: [String: String]? = nil
    /// Watched VoIP sockets' counters (budget refusals, wakes, closes, errors).
    package var voipSockets: VoIPSocketBook.Counters? = nil
    /// The IPC budgets: connections now, and how often each budget was hit (nil in a handler's own view).
    package var ipc: IPCCounters? = nil
    /// The user's session: lock, power (nil without session integration; docs/agent.md, "Session integration").
    package var session: SessionStatus? = nil
    /// Notifications shown and local ones pending (nil without a notification bus and none pending).
    package var notifications: NotificationStatus? = nil
    /// How often the freeze-time rules terminated a handler or reported what it kept (docs/agent.md).
    package var freeze: FreezeCounters? = nil
    /// The UnifiedPush distributor's counters (nil: no distributor).
    package var unifiedPush: UnifiedPushStatus? = nil
    /// Memory pressure: the trigger, what it did (docs/agent.md, "Memory pressure").
    package var memory: MemoryStatus? = nil
}

extension Agent {
    /// The status now.
    package func status() -> AgentStatus {
        let current = now
        let handlers = handlers.names.compactMap { name -> AgentStatus.Handler? in
            guard let configuration = self.handlers.configuration(of: name),
                let machine = self.handlers.machine(of: name)
            else { return nil }
            let connection = self.handlers.connection(of: name)
            var handler = AgentStatus.Handler(
                name: name, topic: configuration.topic, state: machine.lifecycle.rawValue,
                pid: self.handlers.process(of: name)?.pid ?? connection?.peer?.pid, connected: connection != nil,
                strikes: machine.strikeCount, voipBlocked: machine.voipBlocked, userStopped: machine.userStopped,
                owedReports: machine.owedReports.keys.sorted(),
                openBackgroundPushes: machine.openBackground.keys.sorted(),
                tasks: machine.tasks.values.sorted(), budgetRemainingSeconds: machine.budgetRemaining(now: current),
                backgroundTokens: (machine.availableTokens(now: current) * 100).rounded() / 100,
                heldPush: machine.held?.id, holdsAudio: machine.holdsAudio,
                launchRefused: self.handlers.launchRefused(of: name))
            handler.fetch = fetchStatus(name)
            handler.voip = voipStatus(name)
            if machine.lifecycle == .suspended {
                handler.listeningSockets = freezeChecks.listeningSockets(of: name)?.map(\.description)
            }
            handler.memoryBytes = memoryBytes(of: name)
            return handler
        }
        var status = AgentStatus(
            channel: link.channelState.rawValue, gatewayReachable: link.reachable, deviceID: durable.deviceID,
            suspendMechanism: control.mechanism.rawValue, suspendNote: control.note, handlers: handlers,
            tokens: durable.tokens, ipc: ipcCounters)
        status.limits = control.limits.rawValue
        status.limitsNote = control.limitsNote
        status.voipSockets = voipSocketCounters
        status.session = sessionStatus
        status.notifications = notificationStatus
        status.freeze = freezeChecks.counters
        status.unifiedPush = unifiedPushStatus
        status.memory = memoryStatus
        return status
    }

    /// The IPC budgets' counters with the blocking work's.
    var ipcCounters: IPCCounters {
        var counters = ipc.counters
        let closes = blocking.counters
        let copying = copies.counters
        counters.peerDescriptorsClosed = closes.closed + copying.closed
        counters.blockingQueued = closes.queued + copying.queued
        counters.blockingRunning = closes.running + copying.running
        counters.uploadCopies = copying.copies
        return counters
    }

    /// The status document; `only`: what handler `only` may see of it (its own entry and tokens, no device id).
    func statusJSON(only handler: String? = nil) -> String {
        var document = status()
        if let handler, let configuration = handlers.configuration(of: handler) {
            let topics = Set(configuration.topics)
            document.handlers = document.handlers.filter { $0.name == handler }
            document.tokens = document.tokens?.filter { topics.contains($0.key) }
            document.deviceID = nil
            document.suspendNote = ""
            document.ipc = nil
            document.voipSockets = nil
            document.freeze = nil
            document.memory = nil
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(document)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
