import Dispatch
import Logging
import RouseClock
import RouseEventLoop
import RouseNetlink
import RouseSystem
import Synchronization

/// Watches targets with one `NETLINK_ROUTE` socket and tells subscribers when a target's result
/// changes — in the spirit of `SCNetworkReachability` and `NWPathMonitor`, without polling.
///
/// The netlink socket and an eventfd (commands) wait on an ``EventLoop``: the caller's when it gives one, else the
/// monitor's own, whose thread is moved into the network namespace first when one is configured (a namespace
/// always takes the monitor's own loop). The loop sleeps in `epoll_wait` with a timer only while the evaluator has
/// a deadline. Each burst of kernel messages is drained until `EAGAIN`, then every
/// target is evaluated once by asking the kernel for the route (`RTM_GETROUTE`). `ENOBUFS` triggers a
/// full re-dump; the monitor never stops listening. The decisions live in `ReachabilityEvaluator`.
public final class ReachabilityMonitor: Sendable {
    /// Monitor settings.
    public struct Configuration: Sendable {
        /// A network namespace to monitor (e.g. `/run/netns/NAME`); nil for the caller's own.
        public var networkNamespacePath: String?
        /// The event socket's receive buffer (`SO_RCVBUFFORCE`, then `SO_RCVBUF`); 4 MiB by default.
        public var receiveBufferSize: Int
        /// Decision settings.
        public var evaluator: ReachabilityEvaluator.Configuration
        /// Resolver for host-name targets.
        public var resolver: any HostResolver
        /// The clock of the monitor's own loop: its deadlines (flap damping, route expiry) and its events' timestamps.
        /// A test passes a `ManualClock`. (On a caller's loop, that loop's clock.)
        public var clock: any RouseClock

        /// Creates settings.
        public init(
            networkNamespacePath: String? = nil, receiveBufferSize: Int = 4 << 20,
            evaluator: ReachabilityEvaluator.Configuration = .init(), resolver: any HostResolver = SystemHostResolver(),
            clock: any RouseClock = SystemClock()
        ) {
            self.clock = clock
            self.networkNamespacePath = networkNamespacePath
            self.receiveBufferSize = receiveBufferSize
            self.evaluator = evaluator
            self.resolver = resolver
        }
    }

    enum Command: Sendable {
        case watch(ReachabilityTarget)
        case unwatch(ReachabilityTarget)
        case resolved(host: String, generation: Int, addresses: [IPAddress]?)
        case refreshNames
        case barrier(DispatchSemaphore)
        case subscribe(UInt64)
        case stop
    }

    enum Subscriber: Sendable {
        case stream(AsyncStream<ReachabilityEvent>.Continuation)
        case handler(DispatchQueue, @Sendable (ReachabilityEvent) -> Void)
        /// Called on the monitor thread; active once the monitor thread replayed the current values.
        case synchronous(@Sendable (ReachabilityNotice) -> Void, active: Bool)
    }

    enum Phase: Sendable {
        case idle
        case running(eventDescriptor: Int32)
        case stopped
    }

    struct Shared: Sendable {
        var phase = Phase.idle
        var commands: [Command] = []
        var results: [ReachabilityTarget: ReachabilityResult] = [:]
        var order: [ReachabilityTarget] = []
        var subscribers: [UInt64: Subscriber] = [:]
        var nextSubscriber: UInt64 = 1
        var statistics = ReachabilityStatistics()
        var model = NetworkModel()
        var startError: ReachabilityError?
        /// The loop the monitor made for itself (stopped with it), if it did not run on the caller's.
        var ownLoop: EventLoop?
        /// The loop it runs on and its state there (touched on that loop only), once started.
        var loop: EventLoop?
        var runner: MonitorLoop?

        /// The active synchronous handlers, in subscription order.
        var synchronousHandlers: [@Sendable (ReachabilityNotice) -> Void] {
            subscribers.keys.sorted().compactMap { id in
                if case .synchronous(let handler, active: true)? = subscribers[id] { return handler }
                return nil
            }
        }
    }

    let configuration: Configuration
    let logger: Logger
    let shared = Mutex(Shared())
    private let exited = DispatchSemaphore(value: 0)
    private let givenLoop: EventLoop?

    /// Creates a monitor; nothing runs until `start()`. On `loop` (the caller's; it must be running) when given and
    /// no network namespace is configured, else on a loop of its own. Its synchronous handlers run on that loop.
    public init(configuration: Configuration = Configuration(), logger: Logger, loop: EventLoop? = nil) {
        self.configuration = configuration
        self.logger = logger
        self.givenLoop = loop
    }

    /// Opens the sockets on the monitor thread, dumps links and addresses, evaluates the targets
    /// watched so far and returns once their results are known (host names may still be resolving).
    public func start() throws(ReachabilityError) {
        let eventDescriptor: Int32
        do {
            eventDescriptor = try NetlinkSystem.openEventDescriptor()
        } catch {
            throw ReachabilityError(.startFailed, "eventfd", underlying: error)
        }
        let alreadyStarted = shared.withLock { state -> Bool in
            guard case .idle = state.phase else { return true }
            state.phase = .running(eventDescriptor: eventDescriptor)
            return false
        }
        if alreadyStarted {
            Sys.close(eventDescriptor)
            throw ReachabilityError(.notRunning, "start() called twice")
        }
        let ready = DispatchSemaphore(value: 0)
        let loop: EventLoop
        if let givenLoop, configuration.networkNamespacePath == nil {
            loop = givenLoop
        } else {
            do {
                loop = try EventLoop(name: "rouse-reach", clock: configuration.clock, mayBlock: true)
            } catch {
                Sys.close(eventDescriptor)
                shared.withLock { $0.phase = .stopped }
                throw ReachabilityError(.startFailed, "monitor loop: \(error)")
            }
            shared.withLock { $0.ownLoop = loop }
            loop.start()
        }
        let runner = MonitorLoop(monitor: self, eventDescriptor: eventDescriptor, loop: loop)
        shared.withLock { state in
            state.loop = loop
            state.runner = runner
        }
        let begin: @Sendable () -> Void = { [self] in
            runner.start(ready: ready) { [self] in
                Sys.close(eventDescriptor)
                exited.signal()
            }
        }
        // Called on the caller's loop itself (an actor on a daemon's executor loop): waiting for a job queued there
        // would wait for ever.
        if loop.inLoop { begin() } else { loop.execute(begin) }
        ready.wait()
        if let error = shared.withLock({ $0.startError }) {
            exited.wait()
            let ownLoop = shared.withLock { state in
                state.phase = .stopped
                return state.ownLoop.take()
            }
            ownLoop?.stopAndWait()
            throw error
        }
    }

    /// Stops the monitor, waits until it is done (and its own loop's thread ended), and finishes every event stream.
    /// Idempotent.
    public func stop() {
        let (wasRunning, continuations, onLoop) = shared.withLock {
            state -> (Bool, [AsyncStream<ReachabilityEvent>.Continuation], MonitorLoop?) in
            var running = false
            var onLoop: MonitorLoop?
            if case .running(let fd) = state.phase {
                state.commands.append(.stop)
                Sys.eventFDSignal(fd)
                running = true
                if state.loop?.inLoop == true { onLoop = state.runner }
            }
            state.phase = .stopped
            let streams = state.subscribers.values.compactMap {
                subscriber -> AsyncStream<ReachabilityEvent>.Continuation? in
                if case .stream(let continuation) = subscriber { return continuation }
                return nil
            }
            state.subscribers = [:]
            return (running, streams, onLoop)
        }
        // On the monitor's loop: run the stop now rather than wait for a pass that cannot come while this one waits.
        onLoop?.runNow()
        if wasRunning { exited.wait() }
        shared.withLock { $0.ownLoop.take() }?.stopAndWait()
        for continuation in continuations { continuation.finish() }
    }

    /// Starts watching a target. Its first result is delivered as a `.changed` event with no previous value.
    public func watch(_ target: ReachabilityTarget) {
        post(.watch(target))
    }

    /// Stops watching a target.
    public func unwatch(_ target: ReachabilityTarget) {
        post(.unwatch(target))
    }

    /// Re-resolves every host-name target now (they are also re-resolved when links or addresses change).
    public func refreshNames() {
        post(.refreshNames)
    }

    /// Waits until the monitor has processed every kernel message queued before this call and
    /// delivered (dispatched) the resulting events. Returns false on timeout or when not running.
    /// Tests use it to assert that *no* notification followed a change.
    @discardableResult
    public func sync(timeout seconds: Double = 10) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let (running, onLoop) = shared.withLock { state -> (Bool, MonitorLoop?) in
            guard case .running(let fd) = state.phase else { return (false, nil) }
            state.commands.append(.barrier(done))
            Sys.eventFDSignal(fd)
            return (true, state.loop?.inLoop == true ? state.runner : nil)
        }
        guard running else { return false }
        onLoop?.runNow()
        return done.wait(timeout: .now() + seconds) == .success
    }

    func post(_ command: Command) {
        shared.withLock { state in
            state.commands.append(command)
            if case .running(let fd) = state.phase { Sys.eventFDSignal(fd) }
        }
    }

    /// The current result of a target, without blocking (nil until first known).
    public func result(for target: ReachabilityTarget) -> ReachabilityResult? {
        shared.withLock { $0.results[target] }
    }

    /// The current flags of a target, like `SCNetworkReachabilityGetFlags` (nil until known).
    public func flags(for target: ReachabilityTarget) -> ReachabilityFlags? {
        result(for: target)?.flags
    }

    /// Counters so far.
    public var statistics: ReachabilityStatistics { shared.withLock { $0.statistics } }

    /// The mirrored links and addresses after the last evaluation.
    public var model: NetworkModel { shared.withLock { $0.model } }

    /// A stream of events: the current value of every target with a result first, then every change.
    public func events() -> AsyncStream<ReachabilityEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityEvent.self, bufferingPolicy: .unbounded)
        let id = shared.withLock { state -> UInt64? in
            if case .stopped = state.phase { return nil }
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            for target in state.order {
                if let result = state.results[target] {
                    continuation.yield(.changed(Self.initial(target, result, clock: clock)))
                }
            }
            state.subscribers[id] = .stream(continuation)
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.shared.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Calls `handler` on `queue` with the current value of every target, then every change.
    /// Returns a token for `removeHandler(_:)`.
    @discardableResult
    public func addHandler(on queue: DispatchQueue, _ handler: @escaping @Sendable (ReachabilityEvent) -> Void)
        -> UInt64
    {
        shared.withLock { state in
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            for target in state.order {
                if let result = state.results[target] {
                    let event = ReachabilityEvent.changed(Self.initial(target, result, clock: clock))
                    queue.async { handler(event) }
                }
            }
            state.subscribers[id] = .handler(queue, handler)
            return id
        }
    }

    /// Calls `handler` on the monitor thread itself, with no queue or task hop: first the current value
    /// of every target, then every event as soon as it is decided, and an `.overflow` notice after each
    /// `ENOBUFS` re-dump. The handler must return quickly and must not block (it delays the monitor); it
    /// may call the monitor's read accessors. This is the cheapest form (`rouse reach watch` prints from
    /// it). Returns a token for `removeHandler(_:)`.
    @discardableResult
    public func addSynchronousHandler(_ handler: @escaping @Sendable (ReachabilityNotice) -> Void) -> UInt64 {
        let id = shared.withLock { state in
            let id = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[id] = .synchronous(handler, active: false)
            return id
        }
        post(.subscribe(id))
        return id
    }

    /// Removes a handler added with `addHandler(on:_:)` or `addSynchronousHandler(_:)`.
    public func removeHandler(_ token: UInt64) {
        _ = shared.withLock { $0.subscribers.removeValue(forKey: token) }
    }

    static func initial(
        _ target: ReachabilityTarget, _ result: ReachabilityResult, clock: any RouseClock
    ) -> ReachabilityChange {
        ReachabilityChange(
            target: target, result: result, previous: nil, reason: "current value",
            timestamp: wallSeconds(clock), kind: .initial)
    }

    /// The UNIX time events carry, in seconds with microseconds, read on the monitor's clock.
    static func wallSeconds(_ clock: any RouseClock) -> Double { Double(clock.wallMicroseconds) / 1_000_000 }

    /// The clock of the monitor's loop: the caller's loop's, or the configuration's for a loop of its own.
    var clock: any RouseClock {
        if let givenLoop, configuration.networkNamespacePath == nil { return givenLoop.clock }
        return configuration.clock
    }
}
