import FoundationEssentials
import Logging
import RouseActivation
import RouseAgentCore
import RouseClock
import RouseCurl
import RouseSystem
import RouseWire
import ServiceLifecycle

/// The agent: keeps the device channel (driven by reachability), routes pushes to handlers under the
/// iOS rules (``HandlerMachine``), launches, suspends and kills handler processes, serves the IPC socket.
/// An actor: every input (channel record, IPC frame, process exit, timer) is one step on its state.
///
/// Its state is in parts, each a class that owns its own and is touched only on the actor's isolation: the handler
/// table (``HandlerTable``: configurations, rules, processes, connections), the gateway link (``GatewayLink``),
/// the IPC connections (``IPCRegistry``), activations (``ActivationCoordinator``), preservation
/// (``Preservations``), background fetch (``Fetches``) and transfers (``Transfers``), and what survives a
/// restart (``DurableState``). The actor wires them: its steps (in `Agent+*.swift`) read one part and tell another.
package actor Agent: Service {
    let configuration: AgentConfiguration
    /// Per-user mode: the session's environment launches use (``AgentConfiguration/sessionEnvironment`` until a
    /// reload replaces it).
    var sessionEnvironment: [String: String]
    let logger: Logger
    /// Machine time and wall time on the agent's clock.
    let time: AgentTime
    /// What survives a restart.
    let durable: DurableState
    /// Handler lifecycle: every handler's configuration, rules, process and connection.
    let handlers: HandlerTable
    /// The handler rules' one timer (the machines' next deadline).
    let rulesTimer: AgentTimer
    /// The IPC connections.
    let ipc: IPCRegistry
    /// Who may hold a socket-path connection (checked on the accept thread).
    let admission: IPCAdmission
    let control: ProcessControl
    let curl: CurlHTTPClient
    /// The gateway link: channel, reachability, pushes on their way, the handler report, token retries.
    let link: GatewayLink
    /// Who holds audio (activations): fed by handler requests, calls, lifecycle, deaths.
    let activations: ActivationCoordinator
    /// Sealed stores and preservation (nil: nothing preserved, e.g. in-process tests with a JSON store).
    let persistence: AgentPersistence?
    /// State preservation's flags and waits.
    let preservations = Preservations()
    /// Background transfers: the rules, the jobs, the spool accounts, the results owed.
    let transfers = Transfers()
    /// Background fetch: see `Agent+Fetch.swift`.
    let fetches: Fetches
    /// Watched VoIP sockets: see `Agent+VoIP.swift`.
    let voipSockets: VoIPSockets
    /// The freeze-time rules' counters and reports: see `Agent+Freeze.swift`.
    let freezeChecks = FreezeChecks()
    /// Audible background audio: see `Agent+Audible.swift`.
    let audible: AudibleAudio
    /// Keep-alive wakes: see `Agent+VoIP.swift`.
    let keepAlives: KeepAlives
    /// Termination notices and graces: see `Agent+Termination.swift`.
    let terminations: Terminations
    /// The user's session (lock state, pushes waiting for the first unlock): see `Agent+Session.swift`.
    let session: SessionLink
    /// The desktop's notifications (alert pushes shown, local notifications): see `Agent+Notifications.swift`.
    let notifications: NotificationLink
    /// The UnifiedPush distributor: see `Agent+UnifiedPush.swift`.
    let unifiedPush: UnifiedPushLink
    /// Closes of descriptors peers passed, off the executor (a close can block: SO_LINGER, FUSE).
    let blocking = BlockingWork()
    /// Upload copies from descriptors handlers passed, off the executor (pools of their own, one thread per handler:
    /// copies never delay closes nor another handler's copies).
    let copies = UploadCopies()
    /// Memory pressure: see `Agent+Memory.swift`.
    let memory: MemoryPressure
    var listener: Int32 = -1
    /// Clock steps and time-zone changes: see `Agent+TimeChanges.swift`.
    var timeWatch: TimeWatch?
    /// Time changes seen (for tests).
    package internal(set) var timeChanges = 0
    var background: [Task<Void, Never>] = []
    /// Pushes handed to handlers (for tests and the benchmark).
    package private(set) var delivered = 0
    /// Handler archives stored (for tests and the benchmark).
    package var preservesStored: Int { preservations.stored }
    /// Restoration answers recorded (for tests and the benchmark).
    package var restorationsAnswered: Int { preservations.answered }

    /// An agent; nothing runs until ``start()``.
    package init(
        configuration: AgentConfiguration, store: any AgentStateStore, persistence: AgentPersistence? = nil,
        logger: Logger
    ) throws {
        self.configuration = configuration
        self.sessionEnvironment = configuration.sessionEnvironment
        self.persistence = persistence
        self.logger = logger
        let durable = try DurableState(store: store, logger: logger)
        self.durable = durable
        let time = AgentTime(clock: configuration.clock)
        self.time = time
        self.rulesTimer = time.timer()
        let ipc = IPCRegistry(sweep: time.timer())
        self.ipc = ipc
        self.fetches = Fetches(timer: time.timer())
        let blocking = self.blocking
        self.voipSockets = VoIPSockets(limits: configuration.voipSocketLimits) { blocking.closePeerDescriptor($0) }
        self.keepAlives = KeepAlives(timer: time.timer())
        self.audible = AudibleAudio(timer: time.timer())
        self.terminations = Terminations(timer: time.timer())
        self.session = SessionLink(timer: time.timer())
        self.notifications = NotificationLink(timer: time.timer(), book: durable.localNotifications)
        self.unifiedPush = UnifiedPushLink(
            book: durable.unifiedPush, limits: configuration.session?.unifiedPushLimits ?? UnifiedPushLimits())
        self.control = ProcessControl.detect(forced: configuration.suspendMechanism)
        self.memory = MemoryPressure(timer: time.timer())
        self.admission = IPCAdmission(exempt: [0, Sys.uid], meter: ipc.meter)
        let curl = try CurlHTTPClient(logger: logger)
        self.curl = curl
        self.link = GatewayLink(
            api: GatewayAPI(endpoint: configuration.endpoint, curl: curl), backoff: configuration.backoff,
            logger: logger)
        let hooks = configuration.activationHook.flatMap { command in
            command.isEmpty
                ? nil
                : ActivationHookRunner(
                    command: command, timeout: configuration.activationHookTimeout, clock: time.clock, logger: logger)
        }
        if configuration.mode == .user { hooks?.setSession(configuration.sessionEnvironment) }
        let handlers = HandlerTable()
        self.handlers = handlers
        self.activations = ActivationCoordinator(handlers: handlers, hooks: hooks, time: time, logger: logger)
        let now = time.now
        for handler in configuration.handlers {
            var machine = HandlerMachine(rules: handler.rules)
            if let persisted = durable.handlerRecord(handler.name) {
                machine.restore(persisted, now: now, wallEpochMilliseconds: time.wallEpochMilliseconds)
            }
            handlers.add(handler, machine: machine)
        }
    }

    /// Machine time: since the agent's start on its clock (what the machines' deadlines count in).
    var now: Duration { time.now }
    /// The wall clock in UNIX milliseconds, from the agent's clock.
    var wallMilliseconds: Int64 { time.wallMilliseconds }

    /// Runs until graceful shutdown (ServiceLifecycle), then stops.
    package func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Starts: IPC socket, enrollment, reachability, channel.
    package func start() async throws {
        logger.info(
            "suspend mechanism", metadata: ["mechanism": "\(control.mechanism.rawValue)", "detail": "\(control.note)"])
        let limitsMetadata: Logger.Metadata = [
            "limits": "\(control.limits.rawValue)", "detail": "\(control.limitsNote)",
        ]
        if control.limits == .none {
            logger.notice("handler limits cannot be applied", metadata: limitsMetadata)
        } else {
            logger.info("handler limits", metadata: limitsMetadata)
        }
        logger.info("handler weights", metadata: ["cpu": "\(control.throttleNote)", "io": "\(control.ioNote)"])
        reattach()
        control.removeStaleAgents()
        restoreAgentState()
        // logind is asked off the start path (a slow bus must not hold the socket back); pushes wait meanwhile.
        background.append(Task { await self.startSession() })
        background.append(Task { await self.followSystemShutdown() })
        startNotifications()
        startUnifiedPush()
        // The per-user agent's socket is its user's alone (admin and handlers are that user).
        listener = try AgentError.wrapping(
            try Sys.listen(
                path: configuration.socketPath, mode: configuration.mode == .user ? 0o600 : 0o666))
        let listenerFD = listener
        let accepted = AsyncStream<(Int32, IPCConnection.Peer)>.makeStream()
        let admission = admission
        let clock = time.clock
        let logger = logger
        Sys.detachedThread(name: "rouse-agent-accept") {
            admission.acceptLoop(listener: listenerFD, clock: clock, logger: logger) { fd, peer in
                accepted.continuation.yield((fd, peer))
            }
            accepted.continuation.finish()
        }
        background.append(
            Task {
                for await (fd, peer) in accepted.stream { self.accepted(fd, peer: peer) }
            })
        background.append(Task { await self.enrollAndConnect() })
        restoreTransfers()
        startFetch()
        startMemoryPressure()
        startTimeWatch()
    }

    /// Stops the channel, kills launched handlers, closes the socket.
    package func shutdown() async {
        logger.info("agent stopping")
        terminations.agentStopping = true  // a handler that exits from now on is not launched again
        await preserveAll(reason: "shutdown")
        await link.stop()
        for task in background { task.cancel() }
        timeWatch?.stop()
        rulesTimer.cancel()
        audible.timer.cancel()
        ipc.sweep.cancel()
        stopMemoryPressure()
        if listener >= 0 {
            Sys.shutdownBoth(listener)
            Sys.close(listener)
            _ = try? Sys.remove(configuration.socketPath)
            listener = -1
        }
        // Every handler's audio ends with the agent: revoked (hooks restore other programs' streams).
        for name in handlers.names { holderGone(name, reason: .terminatedByAgent) }
        // Running handlers are told and given their grace (none at a system shutdown, none when frozen), then killed.
        await terminateAllForShutdown()
        rulesTimer.cancel()  // the handlers' last messages during their graces may have armed it again
        for connection in ipc.all { connection.close() }
        for process in handlers.processes {
            control.kill(cgroup: process.cgroup, pgid: process.pid, pidfd: process.pidfd)
        }
        await activations.drainHooks()
        stopTransfers()
        fetches.timer.cancel()
        stopVoIP()
        await stopSession()
        await stopNotifications()
        await stopUnifiedPush()
        // Their exits are reaped by the waiter threads; give them a moment so the cgroups can be removed. Real time,
        // not the agent's clock: this waits for the kernel, and a test's manual clock would never let it end.
        for _ in 0..<50 where !handlers.processes.isEmpty {
            try? await Task.sleep(for: .milliseconds(10))
        }
        control.removeBase()
        await curl.shutdown()
    }

    // MARK: Pushes

    func received(_ push: AgentPush) async {
        if durable.wasHandled(push) {
            logger.info(
                "duplicate push acknowledged", metadata: ["push-id": "\(push.id)", "apns-id": "\(push.apnsID)"])
            await link.channel?.ack(push.id)
            return
        }
        if heldForFirstUnlock(push) { return }
        guard link.beginDelivery(push.id) else { return }
        guard let name = handlers.handler(for: push) else {
            logger.warning(
                "push for no handler acknowledged", metadata: ["push-id": "\(push.id)", "topic": "\(push.topic)"])
            link.endDelivery(push.id)
            await link.channel?.ack(push.id)
            return
        }
        if await showsAlert(push, handler: name) { return }
        logger.info(
            "push received", metadata: ["push-id": "\(push.id)", "handler": "\(name)", "type": "\(push.pushType)"])
        let now = now
        let wall = wallMilliseconds
        apply(name, handlers.step(name) { $0.push(push, now: now, wallNowMilliseconds: wall) })
    }

    // MARK: Actions

    /// Performs what `name`'s rules returned, then keeps activations, the durable record, the gateway's report and
    /// the rules' timer in step.
    func apply(_ name: String, _ actions: [HandlerAction]) {
        guard handlers.contains(name) else { return }
        for action in actions { perform(name, action) }
        syncActivation(name)
        syncVoIPWatch(name)
        let persisted = handlers.machine(of: name)?.persisted(wallEpochMilliseconds: time.wallEpochMilliseconds)
        if durable.setHandlerRecord(persisted, for: name) {
            reportHandlers()  // the report is strikes and blocks: it changes only with them
        }
        rescheduleTimer()
    }

    func perform(_ name: String, _ action: HandlerAction) {
        let metadata: Logger.Metadata = ["handler": "\(name)"]
        switch action {
        case .launch(let reason): launch(name, reason: reason)
        case .deliver(let push, let mustReport, let deadline):
            durable.handled(push)
            let message = AgentEvent.push(
                .init(
                    pushID: push.id, pushType: push.pushType, topic: push.topic, payload: push.payload,
                    apnsID: push.apnsID, mustReport: push.isVoIP ? mustReport : nil, seconds: deadline))
            if handlers.connection(of: name)?.send(message) == true { delivered += 1 }
            logger.info("push handed to handler", metadata: metadata.merging(["push-id": "\(push.id)"]) { $1 })
        case .ack(let id):
            link.ack(id)
        case .kill(let reason):
            if preservationDefers(name, action) { return }
            logger.warning("terminating handler", metadata: metadata.merging(["reason": "\(reason)"]) { $1 })
            holderGone(name, reason: .terminatedByAgent)
            terminate(name, reason: reason)
        case .suspend:
            if preservationDefers(name, action) { return }
            suspendHandler(name)  // Agent+Freeze.swift: frozen, or terminated by its freeze rules
        case .resume:
            guard let process = handlers.process(of: name) else { return }
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
            case .voipSocketWake(let wake, let mustReport, let seconds):
                message = socketWakeMessage(name, wake: wake, mustReport: mustReport, seconds: seconds)
            case .keepAlive(let id, let seconds):
                message = .keepAlive(.init(keepAliveID: id, seconds: seconds))
            case .timeChanged(let clockStep, let timeZone):
                message = .timeChanged(
                    .init(clockStep: clockStep, timeZone: timeZone, wallMilliseconds: wallMilliseconds))
            }
            handlers.connection(of: name)?.send(message)
        case .log(let text, let values):
            var merged = metadata
            for (key, value) in values { merged[key] = "\(value)" }
            logger.notice("\(text)", metadata: merged)
        }
    }

    // MARK: Timer

    /// Arms the rules' timer for the earliest deadline of any handler (none: disarmed).
    func rescheduleTimer() {
        syncAudibleAudio()
        // Every step that may change a handler's state or protection (its rules, a call, a session) ends here.
        for name in handlers.names { syncMemoryPriority(name) }
        // The rules' deadlines and the ends of background handlers' CPU windows (none: no CPU timer).
        let deadlines = [handlers.nextDeadline(now: now), nextCPUWindowEnd]
        guard let next = deadlines.compactMap({ $0 }).min() else {
            rulesTimer.cancel()
            return
        }
        rulesTimer.arm(at: time.instant(next)) { await self.tick($0) }
    }

    /// Waits until the timers whose deadline has passed on the agent's clock have run (a test that advanced a
    /// ``ManualClock`` then sees what they did, or that they did nothing).
    package func settleTimers() async {
        while let due = rulesTimer.due { await due.value }
        await settleKeepAliveTimer()
        while let due = rulesTimer.due { await due.value }
    }

    private func tick(_ generation: UInt64) {
        guard rulesTimer.fired(generation) else { return }
        let current = now
        for name in handlers.names {
            // A report (or completion) the handler wrote before its deadline is handled before the deadline is.
            if handlers.waitsForInput(name, now: current) {
                logger.debug("a due deadline waits for the handler's input", metadata: ["handler": "\(name)"])
                continue
            }
            let actions = handlers.step(name) { $0.tick(now: current) }
            if !actions.isEmpty { apply(name, actions) }
        }
        checkCPUBudgets()
        rescheduleTimer()
    }
}
