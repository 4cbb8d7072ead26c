import Dispatch
import Logging
import RouseClock
import RouseEventLoop
import RouseNetlink
import RouseSystem
import Synchronization

/// The monitor on its event loop: owns the sockets and the evaluator; everything here runs on the loop's
/// thread. Shared state is reached only through `ReachabilityMonitor.shared` (a `Mutex`).
final class MonitorLoop: @unchecked Sendable {  // No lock: loop-confined (`execute` hops onto the loop's thread).
    private let monitor: ReachabilityMonitor
    private let eventDescriptor: Int32
    private var evaluator: ReachabilityEvaluator
    private var events: NetlinkSocket?
    private var query: NetlinkSocket?
    private var statistics = ReachabilityStatistics()
    private var logger: Logger
    private var barriers: [DispatchSemaphore] = []
    private var pendingDump = false
    private let loop: EventLoop
    private var netlinkReady = false
    private var commandsReady = false
    private var iterationQueued = false
    private var deadlineTimer: UInt64?
    private var onExit: (() -> Void)?

    init(monitor: ReachabilityMonitor, eventDescriptor: Int32, loop: EventLoop) {
        self.monitor = monitor
        self.eventDescriptor = eventDescriptor
        self.loop = loop
        self.evaluator = ReachabilityEvaluator(configuration: monitor.configuration.evaluator)
        self.logger = monitor.logger
        if let path = monitor.configuration.networkNamespacePath { logger[metadataKey: "netns"] = "\(path)" }
    }

    /// On the loop: opens the sockets (entering the network namespace first, on the monitor's own loop), registers
    /// them, evaluates the targets watched so far and signals `ready`. `onExit` runs once the monitor is done, after
    /// a failed start or a stop.
    func start(ready: DispatchSemaphore, onExit: @escaping () -> Void) {
        loop.assertInLoop()
        self.onExit = onExit
        do throws(ReachabilityError) {
            try open()
        } catch {
            monitor.shared.withLock { $0.startError = error }
            close()
            ready.signal()
            onExit()
            return
        }
        guard let events else { return }
        let commands = Readiness { [self] in
            commandsReady = true
            queueIteration()
        }
        let kernel = Readiness { [self] in
            netlinkReady = true
            queueIteration()
        }
        do {
            try loop.register(eventDescriptor, events: EventLoop.readable, handler: commands)
            try loop.register(events.descriptor, events: EventLoop.readable, handler: kernel)
        } catch {
            monitor.shared.withLock { $0.startError = ReachabilityError(.startFailed, "event loop: \(error)") }
            loop.unregister(eventDescriptor)
            close()
            ready.signal()
            onExit()
            return
        }
        logger.debug("reachability monitor started")
        _ = processCommands()
        evaluate()
        publishStatistics()
        armDeadline()
        ready.signal()
    }

    /// One wake-up, after every descriptor the loop found ready this time (and after a due deadline): the kernel's
    /// messages first, then the commands, then one evaluation, then the barriers.
    private func queueIteration() {
        guard !iterationQueued else { return }
        iterationQueued = true
        // From the loop itself: runs once this pass's handlers and timers are done, without waking it again.
        loop.execute { [self] in iteration() }
    }

    /// A pass now, from the loop's own thread (the monitor's `stop` or `sync` called there): the kernel's messages
    /// and the commands are read whether or not the loop saw them ready yet.
    func runNow() {
        loop.assertInLoop()
        netlinkReady = true
        commandsReady = true
        iteration()
    }

    private func iteration() {
        loop.assertInLoop()
        iterationQueued = false
        guard let events else { return }
        statistics.wakeups += 1
        var stopping = false
        if netlinkReady {
            netlinkReady = false
            drain(events)
        }
        if commandsReady {
            commandsReady = false
            Sys.eventFDDrain(eventDescriptor)
            stopping = processCommands()
        }
        let deadlinePassed = evaluator.nextDeadline.map { monotonicSeconds >= $0 } ?? false
        if !stopping && (evaluator.needsEvaluation || deadlinePassed) { evaluate() }
        publishStatistics()
        for barrier in barriers { barrier.signal() }
        barriers = []
        if stopping { finish() } else { armDeadline() }
    }

    /// A loop timer for the evaluator's next deadline (seconds on the loop's monotonic clock), if it has one; none
    /// otherwise, so an idle monitor sleeps until the kernel speaks.
    private func armDeadline() {
        if let deadlineTimer { loop.cancelTimer(deadlineTimer) }
        deadlineTimer = nil
        guard let deadline = evaluator.nextDeadline else { return }
        let milliseconds = ((deadline - monotonicSeconds) * 1000).rounded(.up)
        let delay = Duration.milliseconds(Int64(max(0, min(milliseconds, Double(Int32.max)))))
        deadlineTimer = loop.schedule(after: delay) { [self] in
            deadlineTimer = nil
            queueIteration()
        }
    }

    /// Now on the loop's clock, in seconds from its origin: what the evaluator's deadlines are measured on (the
    /// monotonic clock, or a test's manual one; never the wall clock, which an NTP step moves).
    private var monotonicSeconds: Double { loop.clock.now.offset.inSeconds }

    private func finish() {
        if let deadlineTimer { loop.cancelTimer(deadlineTimer) }
        deadlineTimer = nil
        loop.unregister(eventDescriptor)
        if let events { loop.unregister(events.descriptor) }
        close()
        logger.debug("reachability monitor stopped")
        onExit?()
        onExit = nil
    }

    private func open() throws(ReachabilityError) {
        let configuration = monitor.configuration
        do {
            if let path = configuration.networkNamespacePath { try NetlinkSystem.enterNetworkNamespace(path: path) }
            events = try NetlinkSocket(groups: RTNL.groups, receiveBufferSize: configuration.receiveBufferSize)
            query = try NetlinkSocket(groups: 0)
        } catch {
            throw ReachabilityError(.startFailed, "opening netlink sockets", underlying: error)
        }
        do {
            try dumpAll()
        } catch {
            throw ReachabilityError(.startFailed, "initial dump", underlying: error)
        }
    }

    private func close() {
        events?.close()
        query?.close()
        events = nil
        query = nil
    }

    /// Receives until `EAGAIN`, applying every message; re-dumps after an overrun or a malformed message.
    private func drain(_ socket: NetlinkSocket) {
        var needsDump = false
        receiving: while true {
            let received: NetlinkSocket.Receive
            do {
                received = try socket.receive()
            } catch {
                logger.warning("netlink receive failed", metadata: ["error": "\(error)"])
                statistics.malformedMessages += 1
                needsDump = true
                break receiving
            }
            switch received {
            case .wouldBlock:
                break receiving
            case .overrun:
                statistics.overruns += 1
                needsDump = true
                logger.notice(
                    "netlink overrun, events lost; re-dumping", metadata: ["overruns": "\(statistics.overruns)"])
            case .messages(let messages):
                for message in messages {
                    statistics.messages += 1
                    do {
                        evaluator.apply(try RouteNetlinkEvent.decode(message))
                    } catch {
                        statistics.malformedMessages += 1
                        needsDump = true
                        logger.warning("malformed netlink message", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
        statistics.bursts += 1
        if needsDump || pendingDump {
            do {
                try dumpAll()
                pendingDump = false
                let overflow = ReachabilityOverflow(
                    overruns: statistics.overruns, timestamp: ReachabilityMonitor.wallSeconds(loop.clock))
                deliverSynchronously(.overflow(overflow), to: monitor.shared.withLock { $0.synchronousHandlers })
            } catch {
                // Still churning: the next burst retries.
                pendingDump = true
                logger.warning("re-dump failed, retrying on the next burst", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Replaces the model with a fresh dump of links and addresses (retried when interrupted).
    private func dumpAll() throws(NetlinkError) {
        guard let query else { return }
        var attempt = 0
        while true {
            attempt += 1
            do throws(NetlinkError) {
                var collected: [RouteNetlinkEvent] = []
                for kind in [NetlinkRequest.DumpKind.links, .addresses] {
                    collected += try query.exchange(.dump(kind, sequence: query.makeSequence()))
                }
                evaluator.resetModel()
                for event in collected { evaluator.apply(event) }
                statistics.dumps += 1
                return
            } catch  where error.code == .overrun && attempt < 20 {
                continue
            }
        }
    }

    /// Runs queued commands; returns true on stop.
    private func processCommands() -> Bool {
        let commands = monitor.shared.withLock { state -> [ReachabilityMonitor.Command] in
            defer { state.commands = [] }
            return state.commands
        }
        var actions: [ReachabilityEvaluator.Action] = []
        for command in commands {
            switch command {
            case .stop: return true
            case .watch(let target): actions += evaluator.watch(target)
            case .unwatch(let target):
                evaluator.unwatch(target)
                monitor.shared.withLock { state in
                    state.results[target] = nil
                    state.order.removeAll { $0 == target }
                }
            case .resolved(let host, let generation, let addresses):
                evaluator.resolved(host: host, generation: generation, addresses: addresses)
            case .refreshNames: actions += evaluator.refreshNames()
            case .barrier(let semaphore): barriers.append(semaphore)
            case .subscribe(let id): subscribe(id)
            }
        }
        perform(actions)
        return false
    }

    private func evaluate() {
        guard let query else { return }
        statistics.evaluations += 1
        let oracle = KernelOracle(socket: query, logger: logger, evaluator: evaluator)
        let actions = evaluator.evaluate(
            now: monotonicSeconds, wall: ReachabilityMonitor.wallSeconds(loop.clock), oracle: oracle)
        statistics.routeLookups += oracle.routeLookups
        statistics.staleRetries += oracle.staleRetries
        statistics.connectProbes += oracle.connectProbes
        perform(actions)
        let targets = evaluator.watchedTargets
        let results = evaluator.results
        monitor.shared.withLock { state in
            state.model = evaluator.model
            state.order = targets
            state.results = results
        }
    }

    /// A synchronous handler added with `addSynchronousHandler`: replays the current value of every
    /// target on this thread, then activates it, so it sees every later event in order.
    private func subscribe(_ id: UInt64) {
        guard case .synchronous(let handler, active: false)? = monitor.shared.withLock({ $0.subscribers[id] }) else {
            return
        }
        for target in evaluator.watchedTargets {
            guard let result = evaluator.result(for: target) else { continue }
            handler(.event(.changed(ReachabilityMonitor.initial(target, result, clock: loop.clock))))
        }
        monitor.shared.withLock { state in
            if state.subscribers[id] != nil { state.subscribers[id] = .synchronous(handler, active: true) }
        }
    }

    /// Calls synchronous handlers on this thread, outside the lock (they may call back into the monitor).
    private func deliverSynchronously(
        _ notice: ReachabilityNotice, to handlers: [@Sendable (ReachabilityNotice) -> Void]
    ) {
        for handler in handlers { handler(notice) }
    }

    private func perform(_ actions: [ReachabilityEvaluator.Action]) {
        for action in actions {
            switch action {
            case .emit(let event):
                statistics.notifications += 1
                if case .changed(let change) = event {
                    logger.debug(
                        "reachability changed",
                        metadata: [
                            "target": "\(change.target)", "status": "\(change.result.path.status)",
                            "reason": "\(change.reason)",
                        ])
                }
                let targets = evaluator.watchedTargets
                let synchronous = monitor.shared.withLock { state in
                    // A `.sourceAddressChanged` follows the `.changed` (kind `.path`) that carried the new source.
                    if case .changed(let change) = event { state.results[change.target] = change.result }
                    state.order = targets
                    for subscriber in state.subscribers.values {
                        switch subscriber {
                        case .stream(let continuation): continuation.yield(event)
                        case .handler(let queue, let handler): queue.async { handler(event) }
                        case .synchronous: break
                        }
                    }
                    return state.synchronousHandlers
                }
                deliverSynchronously(.event(event), to: synchronous)
            case .resolve(let host, let generation):
                let resolver = monitor.configuration.resolver
                let monitor = self.monitor
                // A short-lived thread, not a global dispatch queue: libdispatch's worker pool, once
                // started, keeps a 1 Hz monitor timer running for the life of the process.
                do {
                    try NetlinkSystem.startThread(name: "rouse-resolve") {
                        let addresses = try? resolver.resolve(host)
                        monitor.post(.resolved(host: host, generation: generation, addresses: addresses))
                    }
                } catch {
                    logger.warning("cannot start a resolver thread", metadata: ["error": "\(error)"])
                    monitor.post(.resolved(host: host, generation: generation, addresses: nil))
                }
            }
        }
    }

    private func publishStatistics() {
        statistics.cpuNanoseconds = Sys.threadCPUTimeNanoseconds()
        let statistics = self.statistics
        monitor.shared.withLock { $0.statistics = statistics }
    }
}

/// Calls `body` when its descriptor is ready (on the loop's thread).
private final class Readiness: EventLoopFDHandler {
    private let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
    func handleEvents(_ events: UInt32) { body() }
}
