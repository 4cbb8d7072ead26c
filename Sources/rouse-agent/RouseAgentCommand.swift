import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import RouseAgent
import RouseBuildInfo
import RouseDBus
import RouseDaemon
import RouseState
import RouseSystem
import RouseText
import ServiceLifecycle

/// `rouse-agent`: the device-side service (see docs/agent.md); started by `main.swift`.
struct RouseAgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rouse-agent", abstract: "Keeps the device channel to rouse-gateway and wakes handlers.",
        version: BuildInfo.versionText)

    @Option(
        help: ArgumentHelp(
            "Gateway device API base URL, e.g. https://127.0.0.1:2198; several nodes sharing one store: comma-separated, "
                + "tried in turn when one is unreachable or ends the channel."))
    var gateway: String
    @Option(help: "CA bundle for the gateway's certificate.") var ca: String?
    @Option(
        help: ArgumentHelp(
            "One-time enrollment secret (used once). Unsafe: other local users see it in the process list; "
                + "prefer --enroll-secret-file."))
    var enrollSecret: String?
    @Option(help: "File holding the one-time enrollment secret; - reads it from standard input.")
    var enrollSecretFile: String?
    @Option(help: "Device certificate (PEM) instead of a secret.") var deviceCert: String?
    @Option(help: "Device certificate key (PEM).") var deviceKey: String?
    @Flag(
        help: ArgumentHelp(
            "Per-user mode: a systemd user service of the logged-in user (deploy/rouse-agent-user.service).",
            discussion:
                "Defaults become $XDG_CONFIG_HOME/rouse/handlers.d, $XDG_STATE_HOME/rouse, "
                + "$XDG_RUNTIME_DIR/rouse/agent.sock (mode 0600), the key-file backend; handlers run as the user "
                + "in the session's environment (display, audio server, session bus)."))
    var user = false
    @Option(help: "Handler configuration directory (default /etc/rouse/handlers.d; --user: see above).")
    var handlers: String?
    @Option(help: "State directory: secrets/ (credential, durable state), state/ (preserved state), sealed.")
    var stateDir: String?
    @Option(help: "Data key directory (default: <state-dir>/keys).") var keyDir: String?
    @Option(
        help: ArgumentHelp(
            "Background transfers' spool directory (default: <state-dir>/spool; may be its own file system, so "
                + "that downloads cannot fill the state's)."))
    var spoolDir: String?
    @Option(help: "Data key backend: auto, systemd-credential or key-file (--user: key-file).") var keyBackend: String?
    @Option(help: "Seconds to wait for a handler's preserve answer before suspending or terminating it.")
    var preserveTimeoutSeconds = 1.0
    @Option(help: "Seconds a launch must stay up to count as finished (crash-loop protection).")
    var restorationGraceSeconds = 10.0
    @Option(
        help: ArgumentHelp(
            "Memory-pressure PSI trigger: 'some|full STALL_US WINDOW_US', or 'off'.",
            discussion: "On the handlers' cgroup v2 memory.pressure, else /proc/pressure/memory (docs/agent.md)."))
    var memoryPressure = MemoryPressureSettings.defaultTrigger
    @Option(help: "Seconds after a memory-pressure trigger before the agent looks again and terminates a handler.")
    var memoryPressurePersistSeconds = 2.0
    @Option(
        help: ArgumentHelp(
            "User that handlers without user = run as when the agent is root.",
            discussion: "Never root: a handler that must run as root says allow-root = true in its file."))
    var handlerUser = "rouse-handler"
    @Option(help: "Group whose members may send admin requests (status, start, stop, …) besides root.")
    var adminGroup: String?
    @Option(help: "IPC socket path (default /run/rouse/agent.sock; --user: see above).") var socket: String?
    @Option(help: "Reachability target (default: the gateway host).") var reachabilityTarget: String?
    @Flag(help: "Do not watch reachability; assume the gateway reachable.") var assumeReachable = false
    @Option(
        help: "An interface whose paths are expensive, as cellular ones are (discretionary transfers wait); repeatable."
    )
    var expensiveInterface: [String] = []
    @Option(
        help: ArgumentHelp(
            "Command run (no shell) on every audio activation grant and revoke, e.g. deploy/hooks/pactl-roles.sh.",
            discussion:
                "Arguments: grant|revoke; environment: ROUSE_EVENT, ROUSE_SESSION, ROUSE_ROLE, … (docs/activations.md)."
        )) var activationHook: String?
    @Option(help: "Seconds one activation hook run may take before it is killed.") var activationHookTimeout = 2.0
    @Option(
        help: ArgumentHelp("systemctl(1) that --user asks for the session's environment (tests).", visibility: .hidden))
    var systemctl = "/usr/bin/systemctl"
    @Option(
        help: ArgumentHelp(
            "Follow the session's lock over D-Bus (logind): on or off (default: on with --user, off otherwise).",
            discussion: "docs/agent.md, \"Session integration\": the complete class, pushes before the first unlock."))
    var sessionIntegration: String?
    @Option(help: ArgumentHelp("The bus logind is on, as an address (tests).", visibility: .hidden))
    var systemBusAddress: String?
    @Option(
        help: ArgumentHelp(
            "The notification server's bus, as an address (default: the session bus with --user; in system mode, "
                + "none: alert pushes go to their handler).",
            discussion: "docs/agent.md, \"Notifications\"."))
    var notificationBusAddress: String?
    @Option(help: "Log level.") var logLevel = "info"
    @Flag(help: "Log one JSON object per line.") var json = false

    func validate() throws {
        if case .failure(let reason) = MemoryPressureSettings.option(memoryPressure, persistAfter: .seconds(2)) {
            throw ValidationError("--memory-pressure: \(reason)")
        }
        // Checked before anything starts: a number of seconds that cannot be a Duration is a precise error, not a trap.
        do {
            _ = try SecondsOption.duration(preserveTimeoutSeconds, option: "--preserve-timeout-seconds")
            _ = try SecondsOption.duration(
                restorationGraceSeconds, option: "--restoration-grace-seconds", range: 0...SecondsOption.maximum)
            _ = try SecondsOption.duration(activationHookTimeout, option: "--activation-hook-timeout")
            _ = try SecondsOption.duration(memoryPressurePersistSeconds, option: "--memory-pressure-persist-seconds")
        } catch {
            throw ValidationError("\(error)")
        }
        if enrollSecret != nil && enrollSecretFile != nil {
            throw ValidationError("give --enroll-secret-file or --enroll-secret, not both")
        }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let json = self.json
        RouseLogging.bootstrap(level: level, json: json)
        let logger = Logger(label: "rouse.agent")
        let urls = gateway.split(separator: ",").map { $0.trimmingBlanks() }.filter { !$0.isEmpty }
        guard let first = urls.first else { throw ValidationError("--gateway: no URL") }
        var endpoint = GatewayEndpoint(baseURL: first, caFile: ca)
        endpoint.otherBaseURLs = Array(urls.dropFirst())
        if let deviceCert, let deviceKey { endpoint.clientCertificate = (deviceCert, deviceKey) }
        var secret = enrollSecret
        if let enrollSecretFile {
            let data =
                enrollSecretFile == "-"
                ? Data((try? Sys.readToEnd(0)) ?? [])
                : try Data(contentsOf: URL(fileURLWithPath: enrollSecretFile))
            secret = String(decoding: data, as: UTF8.self).trimmingWhitespace()
        }
        let paths = try AgentPaths(user: user, environment: ProcessInfo.processInfo.environment)
        let handlers = self.handlers ?? paths.handlers
        let stateDir = self.stateDir ?? paths.state
        let socket = self.socket ?? paths.socket
        let keyBackend = self.keyBackend ?? (user ? "key-file" : "auto")
        guard ((try? Sys.status(handlers)) ?? nil)?.isDirectory == true else {
            throw ValidationError("handler directory \(handlers) does not exist")
        }
        let handlerConfigurations = try HandlerConfiguration.load(directory: handlers)
        try FileManager.default.createDirectory(
            atPath: stateDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard let preference = KeyBackendPreference(rawValue: keyBackend) else {
            throw ValidationError("--key-backend must be auto, systemd-credential or key-file")
        }
        guard [nil, "on", "off"].contains(sessionIntegration) else {
            throw ValidationError("--session-integration must be on or off")
        }
        let followsSession = sessionIntegration.map { $0 == "on" } ?? user
        let persistence = try AgentPersistence(
            stateDirectory: stateDir, keyDirectory: keyDir ?? stateDir + "/keys", preference: preference,
            logger: logger, startsUnlocked: !followsSession)
        let socketDirectory = URL(fileURLWithPath: socket).deletingLastPathComponent().path
        try FileManager.default.createDirectory(
            atPath: socketDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: user ? 0o700 : 0o755])
        var configuration = AgentConfiguration(
            endpoint: endpoint, enrollmentSecret: secret, socketPath: socket, handlers: handlerConfigurations)
        // Per-user mode: the session's display, audio server and bus as the user manager knows them, read now (the
        // unit starts after graphical-session.target) and again on SIGHUP (`systemctl --user reload rouse-agent`
        // once a session that started later exported its own), never at a launch.
        let systemctl = self.systemctl
        let sessionEnvironment: (@Sendable () async -> [String: String])? =
            user ? { @Sendable in await UserManager.environment(systemctl: systemctl) } : nil
        if let sessionEnvironment {
            configuration.mode = .user
            configuration.sessionEnvironment = await sessionEnvironment()
        }
        if followsSession {
            var integration = SessionIntegration(
                systemBus: systemBusAddress.map(DBusBus.address) ?? .system, uid: user ? Sys.uid : nil)
            integration.sessionID = configuration.sessionEnvironment["XDG_SESSION_ID"]
            integration.holdUntilFirstUnlock = user
            integration.notificationBus = notificationBusAddress.map(DBusBus.address) ?? (user ? .session : nil)
            // The UnifiedPush distributor lives on the user's session bus (docs/unifiedpush.md).
            integration.unifiedPushBus = user ? (notificationBusAddress.map(DBusBus.address) ?? .session) : nil
            configuration.session = integration
        } else {
            // logind's PrepareForShutdown only: no termination notices at a reboot (docs/handler-protocol.md 14.1).
            configuration.shutdownBus = systemBusAddress.map(DBusBus.address) ?? .system
        }
        configuration.reachabilityTarget = reachabilityTarget
        configuration.handlerUser = handlerUser
        configuration.adminGroup = adminGroup
        configuration.assumeReachable = assumeReachable
        configuration.expensiveInterfaces = Set(expensiveInterface)
        if let activationHook {
            guard FileManager.default.isExecutableFile(atPath: activationHook) else {
                throw ValidationError("activation hook \(activationHook) is not an executable file")
            }
            configuration.activationHook = [activationHook]
        }
        // Checked by validate(): finite and within range.
        configuration.activationHookTimeout = .milliseconds(Int64((activationHookTimeout * 1000).rounded()))
        configuration.preserveTimeout = .milliseconds(Int64((preserveTimeoutSeconds * 1000).rounded()))
        configuration.restorationGrace = .milliseconds(Int64((restorationGraceSeconds * 1000).rounded()))
        // Checked by validate(): a trigger the kernel takes, or "off".
        let persist = Duration.milliseconds(Int64((memoryPressurePersistSeconds * 1000).rounded()))
        if case .success(let settings) = MemoryPressureSettings.option(memoryPressure, persistAfter: persist) {
            configuration.memoryPressure = settings
        }
        configuration.transferSpool = spoolDir ?? stateDir + "/spool"  // background transfers' files
        let store = SealedAgentStateStore(
            store: persistence.secrets, legacyPath: stateDir + "/state.json", logger: logger)
        let agent = try Agent(configuration: configuration, store: store, persistence: persistence, logger: logger)
        let runner = AgentRunner(
            agent: agent, handlersDirectory: handlers, socket: socket, sessionEnvironment: sessionEnvironment,
            logger: logger)
        // No signals for ServiceLifecycle to trap: it would do so with libdispatch sources. main.swift takes them.
        let group = ServiceGroup(configuration: .init(services: [.init(service: runner)], logger: logger))
        for signal in [SIGTERM, SIGINT] {
            DaemonSignals.on(signal) { Task { await group.triggerGracefulShutdown() } }
        }
        try await group.run()
    }
}

/// Starts the agent, tells systemd (`READY=1`, `WATCHDOG=1` every half `WATCHDOG_USEC`, `STOPPING=1`), reloads
/// handlers (and in per-user mode the session's environment) on SIGHUP, stops on graceful shutdown.
struct AgentRunner: Service {
    let agent: Agent
    let handlersDirectory: String
    let socket: String
    /// Per-user mode: reads the session's environment (off the agent's loop).
    let sessionEnvironment: (@Sendable () async -> [String: String])?
    let logger: Logger

    func run() async throws {
        try await agent.start()
        SystemdNotifier.notify("READY=1")
        // Best effort: a closed stdout (EPIPE) must not end a running agent.
        Sys.writeStandardOutput("rouse-agent ready socket=\(socket)\n")
        DaemonSignals.on(SIGHUP) { [agent, handlersDirectory, sessionEnvironment, logger] in
            Task {
                if let sessionEnvironment { await agent.reload(sessionEnvironment: await sessionEnvironment()) }
                do {
                    let handlers = try HandlerConfiguration.load(directory: handlersDirectory)
                    await agent.reload(handlers: handlers)
                } catch {
                    logger.error("reload failed; old handlers kept", metadata: ["error": "\(error)"])
                }
            }
        }
        let watchdog = Task {
            guard let text = ProcessInfo.processInfo.environment["WATCHDOG_USEC"], let usec = Int64(text), usec > 0
            else { return }
            while !Task.isCancelled {
                try? await Task.sleep(for: .microseconds(usec / 2))
                SystemdNotifier.notify("WATCHDOG=1")
            }
        }
        try? await gracefulShutdown()
        SystemdNotifier.notify("STOPPING=1")
        watchdog.cancel()
        await agent.shutdown()
    }
}
