import RouseAgentCore
import RouseClock
import RouseDBus

/// How the agent runs: see docs/agent.md, "Two modes".
package enum AgentMode: String, Sendable {
    /// A system service (root) for headless devices: handlers run as `handlerUser`, in a clean environment.
    case system
    /// A user service of the logged-in user: handlers are the user's programs, in the session's environment.
    case user
}

/// Everything the agent needs to run.
package struct AgentConfiguration: Sendable {
    /// System service or per-user service.
    package var mode = AgentMode.system
    /// Per-user mode: the session's environment (the user manager's) as read at start; ``Agent/reload(sessionEnvironment:)``
    /// replaces it (rouse-agent reads it again on SIGHUP). Launches use it as it is, without asking anyone.
    package var sessionEnvironment: [String: String] = [:]
    /// The gateway's device API.
    package var endpoint: GatewayEndpoint
    /// One-time enrollment secret (used once; the credential is kept in the state store).
    package var enrollmentSecret: String?
    /// The IPC socket path.
    package var socketPath: String
    /// Handlers.
    package var handlers: [HandlerConfiguration]
    /// Reachability target (default: the gateway's host).
    package var reachabilityTarget: String?
    /// Interface names whose paths count as expensive besides cellular ones (discretionary transfers wait while
    /// the path to the gateway is expensive; iOS: cellular and Low Data Mode).
    package var expensiveInterfaces: Set<String> = []
    /// Run the reachability monitor in this network namespace (tests).
    package var networkNamespacePath: String?
    /// Don't watch reachability: assume the gateway reachable.
    package var assumeReachable = false
    /// Channel reconnect backoff.
    package var backoff = ChannelStateMachine.Backoff()
    /// Force a suspend mechanism (tests); nil picks the best.
    package var suspendMechanism: SuspendMechanism?
    /// The user handlers without `user =` run as when the agent runs as root (never root itself: a handler that
    /// must be root says `allow-root = true`). Unused by an agent that is not root: its handlers run as itself.
    package var handlerUser = "rouse-handler"
    /// Members of this group (besides root and the agent's own user) may send admin requests over IPC (status,
    /// sessions, reregister, start/stop, route changes, rotate-key). Never a handler: its connections are refused.
    package var adminGroup: String?
    /// Extra environment for launched handlers (beyond the allow-list: see ``HandlerCredentials``).
    package var handlerEnvironment: [String: String] = [:]
    /// Command (argv, no shell) run on every activation grant and revoke (docs/activations.md, "Hook").
    package var activationHook: [String]?
    /// How long one hook run may take before it is killed.
    package var activationHookTimeout = Duration.seconds(2)
    /// How long the agent waits for a handler's `preserve` answer before suspending or terminating it.
    package var preserveTimeout = Duration.seconds(1)
    /// How long a launched handler (and the agent itself) must stay up before its launch counts as finished
    /// (crash-loop counter cleared, the offered archive deleted).
    package var restorationGrace = Duration.seconds(10)
    /// Where background transfers keep their files (nil: `rouse-transfers` beside the socket).
    package var transferSpool: String?
    /// CA bundle background transfers verify servers with (nil: the system store).
    package var transferCAFile: String?
    /// Background-transfer budgets per handler and in total.
    package var transferLimits = TransferBook.Limits()
    /// Budgets of watched VoIP sockets (per handler, in total; docs/voip-sockets.md).
    package var voipSocketLimits = VoIPSocketBook.Limits()
    /// Every "now", wall time and timer of the agent: the handler rules' deadlines, the channel's backoff and
    /// heartbeat, retries, grace periods. Tests pass a ``ManualClock`` to prove that something does not happen.
    package var clock: any RouseClock = SystemClock()
    /// The user's session over D-Bus (logind's lock state, protected data); nil: none (the session counts as
    /// unlocked from start). docs/agent.md, "Session integration".
    package var session: SessionIntegration?
    /// How long a finished transfer's result (a downloaded file) waits for its handler before it is deleted.
    package var transferResultLifetime = Duration.seconds(7 * 86400)
    /// Without ``session``: the bus on which logind's `PrepareForShutdown` is followed (no termination notices at a
    /// system shutdown); nil: not followed (handlers stopped at a reboot then get their notice).
    package var shutdownBus: DBusBus?
    /// The time-zone link whose replacement is a `timeChanged` (`timeZone`); its directory is watched (inotify). nil:
    /// only clock steps are watched.
    package var timeZonePath: String? = "/etc/localtime"

    /// Memory pressure: the PSI trigger and how long pressure must last before handlers are terminated (nil: not
    /// watched). docs/agent.md, "Memory pressure".
    package var memoryPressure: MemoryPressureSettings? = MemoryPressureSettings()

    /// A configuration.
    package init(
        endpoint: GatewayEndpoint, enrollmentSecret: String? = nil, socketPath: String,
        handlers: [HandlerConfiguration]
    ) {
        self.endpoint = endpoint
        self.enrollmentSecret = enrollmentSecret
        self.socketPath = socketPath
        self.handlers = handlers
    }
}
