import Foundation
import Logging
import RouseActivation
import RouseAgentCore
import RouseClock
import RouseCurl
import RouseReachability
import RouseWire
import ServiceLifecycle

/// The agent: keeps the device channel (driven by reachability), routes pushes to handlers under the
/// iOS rules (``HandlerMachine``), launches, suspends and kills handler processes, serves the IPC socket.
/// An actor: every input (channel record, IPC frame, process exit, timer) is one step on its state.
public actor Agent: Service {
    struct Slot {
        var configuration: HandlerConfiguration
        var machine: HandlerMachine
        var process: HandlerProcess?
        var connection: IPCConnection?
        var launchReason: String?
        /// Why its last launch was refused (its identity or executable), until a launch succeeds.
        var launchRefused: String?
        /// Launches that failed for a shortage since the last one that worked.
        var launchAttempts = 0
        /// State preservation: see ``Agent/Preservation``.
        var preservation = Preservation()
    }

    let configuration: AgentConfiguration
    /// Per-user mode: the session's environment launches use (``AgentConfiguration/sessionEnvironment`` until a
    /// reload replaces it).
    var sessionEnvironment: [String: String]
    let logger: Logger
    let store: any AgentStateStore
    var state: AgentState
    var slots: [String: Slot] = [:]
    var connections: [Int: IPCConnection] = [:]
    var registered: [Int: String] = [:]
    var nextConnectionID = 1
    /// When each socket-path connection that has not registered is closed (machine time).
    var registrationDeadlines: [Int: Duration] = [:]
    /// The one timer that closes them.
    let registrationSweep: AgentTimer
    /// Who may hold a socket-path connection (checked on the accept thread).
    let admission: IPCAdmission
    var inFlight: Set<String> = []
    let control: ProcessControl
    let curl: CurlHTTPClient
    let api: GatewayAPI
    var channel: DeviceChannel?
    var channelState: ChannelStateMachine.State = .waitingForNetwork
    var gatewayReachable = false
    var listener: Int32 = -1
    var monitor: ReachabilityMonitor?
    var background: [Task<Void, Never>] = []
    /// The handler rules' one timer (the machines' next deadline).
    let rulesTimer: AgentTimer
    /// Every "now", wall time and timer of the agent (``AgentConfiguration/clock``).
    let clock: any RouseClock
    /// The agent's time zero on ``clock``: machine time (``now``) counts from it.
    let epoch: RouseInstant
    /// The handler report the gateway last accepted (nil: none since the channel opened).
    var handlerReportSent: String?
    /// A handler report is on its way to the gateway.
    var handlerReportSending = false
    /// The channel opened while a report was on its way: send once more when it is back.
    var handlerReportOwed = false
    var handlerReportTask: Task<Void, Never>?
    /// A pending retry of failed token requests, and the delay of the next one.
    var tokenRetry: Task<Void, Never>?
    var tokenRetryDelay = Duration.milliseconds(500)
    /// UNIX time (milliseconds) at ``epoch``: maps strike times to wall time and back across restarts.
    let wallEpochMilliseconds: Int64
    /// Who holds audio (activations): fed by handler requests, calls, lifecycle, deaths.
    var arbiter = ActivationArbiter()
    /// What the arbiter was last told of each handler's run state.
    var arbiterStates: [String: HandlerState] = [:]
    let hooks: ActivationHookRunner?
    /// Pushes handed to handlers (for tests and the benchmark).
    public private(set) var delivered = 0
    /// Sealed stores and preservation (nil: nothing preserved, e.g. in-process tests with a JSON store).
    let persistence: AgentPersistence?
    /// Handlers waiting to answer a `preserveRequest`, by waiter id.
    var preserveWaiters: [Int: (handler: String, continuation: CheckedContinuation<Void, Never>)] = [:]
    var nextPreserveWaiter = 1
    /// Activation messages for a handler whose process runs but is not connected (re-attached after an agent
    /// restart, not yet reconnected): sent, in order, when it registers.
    var activationOutbox: [String: [IPCFrame<AgentEvent>]] = [:]
    /// Handler archives stored and restoration answers recorded (for tests and the benchmark).
    package internal(set) var preservesStored = 0
    package internal(set) var restorationsAnswered = 0
    /// Background transfers: see `Agent+Transfers.swift`.
    var transfers = TransferShell()
    /// Background fetch: see `Agent+Fetch.swift`.
    var fetches = FetchShell()
    /// The one timer of every handler's fetches.
    let fetchTimer: AgentTimer

    /// An agent; nothing runs until ``start()``.
    public init(
        configuration: AgentConfiguration, store: any AgentStateStore, persistence: AgentPersistence? = nil,
        logger: Logger
    ) throws {
        self.configuration = configuration
        self.sessionEnvironment = configuration.sessionEnvironment
        self.persistence = persistence
        self.logger = logger
        self.store = store
        self.state = try store.load()
        self.clock = configuration.clock
        self.epoch = clock.now
        self.wallEpochMilliseconds = clock.wallMilliseconds
        self.rulesTimer = AgentTimer(clock: clock)
        self.registrationSweep = AgentTimer(clock: clock)
        self.fetchTimer = AgentTimer(clock: clock)
        self.control = ProcessControl.detect(forced: configuration.suspendMechanism)
        self.admission = IPCAdmission(exempt: [0, AgentSyscalls.uid])
        self.curl = try CurlHTTPClient(logger: logger)
        self.api = GatewayAPI(endpoint: configuration.endpoint, curl: curl)
        self.hooks = configuration.activationHook.flatMap { command in
            command.isEmpty
                ? nil
                : ActivationHookRunner(command: command, timeout: configuration.activationHookTimeout, logger: logger)
        }
        let now = epoch.duration(to: clock.now)
        for handler in configuration.handlers {
            var machine = HandlerMachine(rules: handler.rules)
            if let persisted = state.handlers[handler.name] {
                machine.restore(persisted, now: now, wallEpochMilliseconds: wallEpochMilliseconds)
            }
            slots[handler.name] = Slot(configuration: handler, machine: machine)
        }
    }

    /// Machine time: since ``epoch`` on the agent's clock (what the machines' deadlines count in).
    var now: Duration { epoch.duration(to: clock.now) }
    /// The wall clock in UNIX milliseconds, from the agent's clock.
    var wallMilliseconds: Int64 { clock.wallMilliseconds }

    /// The instant of machine time `time`.
    func instant(_ time: Duration) -> RouseInstant { epoch.advanced(by: time) }

    /// Runs until graceful shutdown (ServiceLifecycle), then stops.
    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Starts: IPC socket, enrollment, reachability, channel.
    public func start() async throws {
        logger.info(
            "suspend mechanism", metadata: ["mechanism": "\(control.mechanism.rawValue)", "detail": "\(control.note)"])
        reattach()
        control.removeStaleAgents()
        restoreAgentState()
        // The per-user agent's socket is its user's alone (admin and handlers are that user).
        listener = try AgentSyscalls.listen(
            path: configuration.socketPath, mode: configuration.mode == .user ? 0o600 : 0o666)
        let listenerFD = listener
        let accepted = AsyncStream<(Int32, IPCConnection.Peer)>.makeStream()
        let admission = admission
        let logger = logger
        let thread = Thread {
            admission.acceptLoop(listener: listenerFD, logger: logger) { fd, peer in
                accepted.continuation.yield((fd, peer))
            }
            accepted.continuation.finish()
        }
        thread.name = "rouse-agent-accept"
        thread.start()
        background.append(
            Task {
                for await (fd, peer) in accepted.stream { self.accepted(fd, peer: peer) }
            })
        background.append(Task { await self.enrollAndConnect() })
        restoreTransfers()
        startFetch()
    }

    /// Stops the channel, kills launched handlers, closes the socket.
    public func shutdown() async {
        logger.info("agent stopping")
        await preserveAll(reason: "shutdown")
        await channel?.stop()
        for task in background { task.cancel() }
        handlerReportTask?.cancel()
        tokenRetry?.cancel()
        rulesTimer.cancel()
        registrationSweep.cancel()
        monitor?.stop()
        if listener >= 0 {
            AgentSyscalls.shutdown(listener)
            AgentSyscalls.close(listener)
            unlink(configuration.socketPath)
            listener = -1
        }
        // Every handler's audio ends with the agent: revoked (hooks restore other programs' streams).
        for name in slots.keys.sorted() { holderGone(name, reason: .terminatedByAgent) }
        for connection in connections.values { connection.close() }
        for slot in slots.values {
            if let process = slot.process {
                control.kill(cgroup: process.cgroup, pgid: process.pid, pidfd: process.pidfd)
            }
        }
        await hooks?.drain()
        stopTransfers()
        fetchTimer.cancel()
        // Their exits are reaped by the waiter threads; give them a moment so the cgroups can be removed. Real time,
        // not the agent's clock: this waits for the kernel, and a test's manual clock would never let it end.
        for _ in 0..<50 where slots.values.contains(where: { $0.process != nil }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        control.removeBase()
        await curl.shutdown()
    }

    // MARK: Gateway

    private func enrollAndConnect() async {
        // The channel's backoff (configurable) also paces enrollment attempts.
        var delay = configuration.backoff.initial
        while state.deviceID == nil && !Task.isCancelled {
            do {
                let secret = configuration.endpoint.clientCertificate == nil ? configuration.enrollmentSecret : nil
                if secret == nil && configuration.endpoint.clientCertificate == nil {
                    logger.error("not enrolled and no enrollment secret or device certificate configured")
                    return
                }
                let (device, credential) = try await api.enroll(secret: secret)
                state.deviceID = device
                state.credential = credential
                persist()
                logger.info("enrolled", metadata: ["device": "\(device)"])
            } catch {
                logger.warning("enrollment failed", metadata: ["error": "\(error)"])
                try? await clock.sleep(for: delay)
                delay = min(delay * 2, configuration.backoff.maximum)
            }
        }
        guard !Task.isCancelled else { return }
        let channel = DeviceChannel(
            api: api, credential: state.credential, backoff: configuration.backoff, clock: clock, logger: logger,
            events: DeviceChannel.Events(
                push: { push in await self.received(push) },
                state: { state in await self.channelChanged(state) }))
        self.channel = channel
        await refreshTokens()
        if configuration.assumeReachable {
            await reachabilityChanged(true)
            return
        }
        startReachability()
    }

    private func startReachability() {
        let targetText = configuration.reachabilityTarget ?? configuration.endpoint.host
        guard let target = try? ReachabilityTarget(parsing: targetText) else {
            logger.error("bad reachability target; assuming reachable", metadata: ["target": "\(targetText)"])
            Task { await reachabilityChanged(true) }
            return
        }
        let monitor = ReachabilityMonitor(
            configuration: .init(
                networkNamespacePath: configuration.networkNamespacePath,
                evaluator: .init(expensiveInterfaces: configuration.expensiveInterfaces)),
            logger: logger)
        do {
            try monitor.start()
        } catch {
            logger.error("reachability monitor failed; assuming reachable", metadata: ["error": "\(error)"])
            Task { await reachabilityChanged(true) }
            return
        }
        self.monitor = monitor
        monitor.watch(target)
        let events = monitor.events()
        background.append(
            Task {
                for await event in events where event.target == target {
                    switch event {
                    case .changed(let change):
                        self.transfersNetwork(expensive: change.result.path.isExpensive)
                        await self.reachabilityChanged(change.result.isUsable)
                    case .sourceAddressChanged: await self.channel?.sourceAddressChanged()
                    }
                }
            })
    }

    package func reachabilityChanged(_ usable: Bool) async {
        let changed = usable != gatewayReachable
        gatewayReachable = usable
        transfersNetwork(usable)
        if changed { fetchOpportunity(wakeUp: usable) }
        await channel?.reachability(usable)
        guard changed else { return }
        for name in slots.keys.sorted() {
            let actions = slots[name]!.machine.reachability(usable)
            apply(name, actions)
        }
    }

    private func channelChanged(_ new: ChannelStateMachine.State) async {
        let was = channelState
        channelState = new
        if new == .open && was != .open {
            // Once per channel: a gateway that missed a report (or lost it) catches up.
            handlerReportSent = nil
            handlerReportOwed = handlerReportSending
            reportHandlers()
            await refreshTokens()
            fetchOpportunity(wakeUp: true)
        }
    }

    /// Fetches missing tokens and hands new or changed ones to connected handlers. A failed request is retried
    /// with the channel's backoff (doubling from `initial` to `maximum`) until every topic has its token.
    func refreshTokens() async {
        var failed = false
        for name in slots.keys.sorted() {
            guard let slot = slots[name] else { continue }
            for topic in slot.configuration.topics where state.tokens[topic] == nil {
                do {
                    state.tokens[topic] = try await api.token(topic: topic, credential: state.credential)
                    persist()
                } catch {
                    failed = true
                    logger.warning("token request failed", metadata: ["topic": "\(topic)", "error": "\(error)"])
                }
            }
            handTokens(name)
        }
        guard failed else {
            tokenRetryDelay = configuration.backoff.initial
            return
        }
        // No timer while the gateway is unreachable: the channel opening again fetches what is missing.
        guard tokenRetry == nil, gatewayReachable else { return }
        let delay = tokenRetryDelay
        tokenRetryDelay = min(tokenRetryDelay * 2, configuration.backoff.maximum)
        let clock = clock
        tokenRetry = Task {
            try? await clock.sleep(for: delay)
            guard !Task.isCancelled else { return }
            await self.retryTokens()
        }
    }

    private func retryTokens() async {
        tokenRetry = nil
        await refreshTokens()
    }

    /// Sends the handler its tokens when they are new to it (PushKit's didUpdate credentials).
    func handTokens(_ name: String, force: Bool = false) {
        guard let slot = slots[name], let connection = slot.connection else { return }
        for topic in slot.configuration.topics {
            guard let token = state.tokens[topic] else { continue }
            if !force && state.handedTokens[name]?[topic] == token { continue }
            if connection.send(.credentials(.init(topic: topic, token: token))) {
                state.handedTokens[name, default: [:]][topic] = token
                persist()
            }
        }
    }

    /// The public tokens by topic (for tests and status).
    public func tokens() -> [String: String] { state.tokens }

    // MARK: Pushes

    func received(_ push: AgentPush) async {
        // A window written by an older agent holds bare ids (no space): still honoured until they age out.
        let legacy = !push.apnsID.contains(" ") && state.handled.contains(push.apnsID)
        if state.handled.contains(push.deduplicationKey) || legacy {
            logger.info(
                "duplicate push acknowledged", metadata: ["push-id": "\(push.id)", "apns-id": "\(push.apnsID)"])
            await channel?.ack(push.id)
            return
        }
        guard inFlight.insert(push.id).inserted else { return }
        guard
            let name = slots.keys.sorted().first(where: { name in
                let handler = slots[name]!.configuration
                return handler.topics.contains(push.topic) && handler.pushTypes.contains(push.pushType)
            })
        else {
            logger.warning(
                "push for no handler acknowledged", metadata: ["push-id": "\(push.id)", "topic": "\(push.topic)"])
            inFlight.remove(push.id)
            await channel?.ack(push.id)
            return
        }
        logger.info(
            "push received", metadata: ["push-id": "\(push.id)", "handler": "\(name)", "type": "\(push.pushType)"])
        let actions = slots[name]!.machine.push(push, now: now, wallNowMilliseconds: wallMilliseconds)
        apply(name, actions)
    }

    // MARK: Actions

    func apply(_ name: String, _ actions: [HandlerAction]) {
        guard slots[name] != nil else { return }
        for action in actions { perform(name, action) }
        syncActivation(name)
        let persisted = slots[name]?.machine.persisted(wallEpochMilliseconds: wallEpochMilliseconds)
        if state.handlers[name] != persisted {
            state.handlers[name] = persisted
            persist()
            reportHandlers()  // the report is strikes and blocks: it changes only with them
        }
        rescheduleTimer()
    }

    func perform(_ name: String, _ action: HandlerAction) {
        let metadata: Logger.Metadata = ["handler": "\(name)"]
        switch action {
        case .launch(let reason): launch(name, reason: reason)
        case .deliver(let push, let mustReport, let deadline):
            state.handled.insert(push.deduplicationKey)
            persist()
            let message = AgentEvent.push(
                .init(
                    pushID: push.id, pushType: push.pushType, topic: push.topic, payload: push.payload,
                    apnsID: push.apnsID, mustReport: push.isVoIP ? mustReport : nil, seconds: deadline))
            if slots[name]?.connection?.send(message) == true { delivered += 1 }
            logger.info("push handed to handler", metadata: metadata.merging(["push-id": "\(push.id)"]) { $1 })
        case .ack(let id):
            inFlight.remove(id)
            let channel = channel
            Task { await channel?.ack(id) }
        case .kill(let reason):
            if preservationDefers(name, action) { return }
            logger.warning("terminating handler", metadata: metadata.merging(["reason": "\(reason)"]) { $1 })
            holderGone(name, reason: .terminatedByAgent)
            if let process = slots[name]?.process {
                control.kill(cgroup: process.cgroup, pgid: process.pid, pidfd: process.pidfd)
            } else if let connection = slots[name]?.connection, let pidfd = connection.peer?.pidfd, pidfd >= 0 {
                AgentSyscalls.signal(pidfd: pidfd, SIGKILL)
            }
        case .suspend:
            if preservationDefers(name, action) { return }
            guard let process = slots[name]?.process, mayFreeze(name) else { return }
            let ok = control.freeze(cgroup: process.cgroup, pgid: process.pid)
            logger.info(
                "handler suspended",
                metadata: metadata.merging(["mechanism": "\(control.mechanism.rawValue)", "ok": "\(ok)"]) { $1 })
        case .resume:
            guard let process = slots[name]?.process else { return }
            control.thaw(cgroup: process.cgroup, pgid: process.pid)
            logger.info("handler resumed", metadata: metadata)
        case .notify(let kind):
            let message: AgentEvent
            switch kind {
            case .taskExpiring(let id, let taskName, let seconds):
                message = .taskExpiring(.init(taskID: id, taskName: taskName, seconds: seconds))
            case .taskBegun(let id, let taskName):
                message = .taskBegun(.init(taskID: id, taskName: taskName))
            case .lifecycle(let lifecycle):
                message = .lifecycle(.init(state: lifecycle.rawValue))
            case .reachability(let reachable):
                message = .reachability(.init(reachable: reachable))
            }
            slots[name]?.connection?.send(message)
        case .log(let text, let values):
            var merged = metadata
            for (key, value) in values { merged[key] = "\(value)" }
            logger.notice("\(text)", metadata: merged)
        }
    }

    func persist() {
        do {
            try store.save(state)
        } catch {
            logger.error("state not saved", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Timer

    func rescheduleTimer() {
        let current = now
        guard let next = slots.values.compactMap({ $0.machine.nextDeadline(now: current) }).min() else {
            rulesTimer.cancel()
            return
        }
        rulesTimer.arm(at: instant(next)) { await self.tick() }
    }

    /// Waits until the timers whose deadline has passed on the agent's clock have run (a test that advanced a
    /// ``ManualClock`` then sees what they did, or that they did nothing).
    package func settleTimers() async {
        while let due = rulesTimer.due { await due.value }
    }

    private func tick() {
        rulesTimer.fired()
        let current = now
        for name in slots.keys.sorted() {
            let actions = slots[name]!.machine.tick(now: current)
            if !actions.isEmpty { apply(name, actions) }
        }
        rescheduleTimer()
    }
}
