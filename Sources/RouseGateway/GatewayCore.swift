import FoundationEssentials
import Logging
import RouseClock
import RouseEventLoop
import RouseHTTP2
import Synchronization

/// The gateway's store thread: it owns the store connection and every device's delivery state, and runs the
/// jobs that the provider and device handlers submit, in order: provider jobs among themselves, device requests
/// and channel closes among themselves, with at most `deviceJobsPerBatch` device jobs in one batch.
///
/// A batch runs its provider jobs first, then its device jobs. This moves a device request after pushes that
/// arrived later, which no client can tell from an arrival-order run: neither had its answer when the other
/// arrived, so either order is one the two could have met in. What must keep its order does: a device's requests
/// and its connection's close share one lane (an open is never overtaken by its own close). A push written to a
/// channel whose close is still queued is what happens with any close the gateway has not seen yet: a stored
/// push stays pending until acknowledged; an `apns-expiration: 0` push was tried once, as APNs does.
///
/// Jobs queued while a transaction runs are taken together and run in one transaction (one fsync for many
/// pushes). Their effects — responses, channel writes, metrics — run only after COMMIT returned: a provider
/// never sees 200 for a push that is not durable. If a batch fails, each of its jobs is run again in its own
/// transaction, so one bad job cannot fail the others. Delivery state is a value: a failed transaction leaves
/// it as it was.
package final class GatewayCore: Sendable {
    /// A unit of work on the store thread.
    struct Job: Sendable {
        /// Runs inside the batch's transaction; may queue effects.
        let run: @Sendable (inout CoreContext) throws -> Void
        /// Called (on the store thread) when the job's transaction failed.
        let fail: @Sendable (GatewayError) -> Void
        /// A device request whose credential is not proven yet: it counts against the device budget, not the
        /// providers' (a flood of bogus device credentials must not turn provider pushes into 503s).
        var isDeviceRequest = false
    }

    private struct Queue {
        /// Provider pushes and the other jobs, in order.
        var jobs: [Job] = []
        /// Device requests and the channel closes of device connections, in order among themselves. Each batch
        /// takes at most `deviceJobsPerBatch` of them besides the pushes: checking a flood of bogus credentials
        /// must not hold a provider's push back for long.
        var deviceJobs: [Job] = []
        /// How many of `deviceJobs` are device requests (the device budget).
        var deviceRequests = 0
        var stopping = false
    }

    /// Device jobs in one batch at most (each checks a credential: tens of microseconds).
    static let deviceJobsPerBatch = 16

    let store: any GatewayStore
    let limits: GatewayConfiguration.Limits
    let metrics: GatewayMetrics
    let logger: Logger
    /// Expirations, sweeps, heartbeats and leases read its wall clock (UNIX milliseconds).
    let clock: any RouseClock
    /// This node's id among the nodes sharing the store (configuration `node`).
    let node: String
    /// WebPush ingest, if configured (subscriptions are refused without it).
    let webPush: WebPushConfiguration?
    /// Per-subscription rate limits of WebPush ingest (store thread only; bounded by `WebPushRates.maxEntries`).
    let webPushRates = Mutex(WebPushRates())
    private let queue = Mutex(Queue())
    /// The store thread: an event loop on `clock`, so its sweeps and heartbeats are loop timers and the PostgreSQL
    /// listener's socket can wait on it too. Its work blocks (SQLite's fsync, PostgreSQL round trips): nothing that
    /// must answer quickly runs on it.
    let loop: EventLoop
    /// A pass over the queue is on the loop's queue (one for any number of jobs submitted meanwhile).
    private let drainQueued = Atomic<Bool>(false)
    /// Resumed on the loop once the queue ran dry after `stop()`.
    private let stopped = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let started = Atomic<Bool>(false)
    /// Owned by the store thread only (read and written inside `runLoop`); the Mutex only satisfies Sendable.
    private let state = Mutex(CoreState())
    /// The next channel id: from a random start (52 bits: a JSON number keeps it exact), so that the ids of this
    /// run are not those of an earlier run of the node, which a captured node message (`replaced`) may name.
    private let channelIDs = Atomic<UInt64>(UInt64.random(in: 1...(1 << 52)))
    /// Messages from other nodes may have been lost, and the channels here have not looked at the store since.
    private let lostNews = Atomic<Bool>(false)
    /// Messages from other nodes not taken by the store thread yet.
    private let inbox = Mutex(NodeInbox())

    /// A core over `store`, on `clock` (a test's manual clock controls expiry).
    init(
        store: any GatewayStore, limits: GatewayConfiguration.Limits, metrics: GatewayMetrics, logger: Logger,
        clock: any RouseClock, node: String = GatewayConfiguration.defaultNode, webPush: WebPushConfiguration? = nil
    ) throws {
        loop = try EventLoop(name: "rouse-gateway-store", clock: clock, mayBlock: true)
        self.node = node
        self.webPush = webPush
        self.store = store
        self.limits = limits
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
    }

    /// Starts the store thread.
    func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        loop.start()
        loop.execute { [self] in begin() }
    }

    /// Runs the jobs already queued, then ends the node's channels; the loop keeps running (the PostgreSQL listener
    /// may still be on it) until ``stopLoop()``.
    func stop() async {
        guard started.load(ordering: .relaxed) else { return }
        let first = queue.withLock { queue -> Bool in
            defer { queue.stopping = true }
            return !queue.stopping
        }
        guard first else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            stopped.withLock { $0 = continuation }
            scheduleDrain()
        }
    }

    /// Ends the store thread (after ``stop()`` and after whatever else waits on its loop was stopped).
    func stopLoop() {
        guard started.load(ordering: .relaxed) else { return }
        loop.stopAndWait()
    }

    /// A fresh channel id.
    func makeChannelID() -> UInt64 { channelIDs.add(1, ordering: .relaxed).oldValue }

    /// Queues a job; false when the queue is full or the core stopped (the caller answers 503 / 429).
    @discardableResult
    func submit(_ job: Job) -> Bool {
        let accepted = queue.withLock { queue -> Bool in
            guard !queue.stopping else { return false }
            if job.isDeviceRequest {
                guard queue.deviceRequests < limits.maxQueuedDeviceRequests else { return false }
                queue.deviceRequests += 1
                queue.deviceJobs.append(job)
            } else {
                guard queue.jobs.count < limits.maxQueuedJobs else { return false }
                queue.jobs.append(job)
            }
            return true
        }
        if accepted {
            scheduleDrain()
        } else if job.isDeviceRequest {
            metrics.limitHit(listener: "device", limit: "device-queue-full")
        }
        return accepted
    }

    /// Queues a job that must not be refused (channel closes: bounded by the number of connections), in order with
    /// the device requests.
    func submitControl(_ job: Job) {
        let accepted = queue.withLock { queue -> Bool in
            guard !queue.stopping else { return false }
            queue.deviceJobs.append(job)
            return true
        }
        if accepted { scheduleDrain() }
    }

    /// Runs `body` on the store thread inside a transaction and returns its result (admin views, tests).
    func perform<T: Sendable>(_ body: @escaping @Sendable (inout CoreContext) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let once = Mutex<CheckedContinuation<T, any Error>?>(continuation)
            let job = Job(
                run: { context in
                    let value = try body(&context)
                    context.effects.append { once.withLock { $0.take() }?.resume(returning: value) }
                },
                fail: { error in once.withLock { $0.take() }?.resume(throwing: error) })
            if !submit(job) { once.withLock { $0.take() }?.resume(throwing: GatewayError.startup("gateway stopped")) }
        }
    }

    // MARK: The store thread

    /// The loop's first job: the node's lease (renewed by every sweep when several nodes share the store; a
    /// previous life's channels are forgotten), the sweep and heartbeat timers, and what was queued meanwhile.
    /// Asleep between jobs until the next sweep or heartbeat: an idle gateway wakes for those only.
    private func begin() {
        runBatch([leaseJob(fresh: true)])
        scheduleSweep(after: .seconds(limits.sweepIntervalSeconds))
        if limits.heartbeatSeconds > 0 { scheduleHeartbeat() }
        drain()
    }

    private func scheduleSweep(after delay: Duration) {
        loop.schedule(after: delay) { [self] in
            guard !queue.withLock({ $0.stopping }) else { return }
            runBatch([sweepJob()])
            scheduleSweep(after: .seconds(max(limits.sweepIntervalSeconds, 1)))
        }
    }

    private func scheduleHeartbeat() {
        loop.schedule(after: .seconds(limits.heartbeatSeconds)) { [self] in
            guard !queue.withLock({ $0.stopping }) else { return }
            let frame = ChannelFrame.heartbeat(time: clock.wallMilliseconds)
            for slot in state.withLock({ Array($0.channels.values) }) { slot.stream.write(frame) }
            scheduleHeartbeat()
        }
    }

    /// A pass over the queue soon, unless one is queued already.
    private func scheduleDrain() {
        guard !drainQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.execute { [self] in
            drainQueued.store(false, ordering: .releasing)
            drain()
        }
    }

    /// Runs the queued jobs in batches until none is left; after `stop()`, then ends the node's channels.
    private func drain() {
        while true {
            let (jobs, stopping) = queue.withLock { queue -> ([Job], Bool) in
                let count = min(queue.jobs.count, limits.maxBatch)
                let deviceCount = min(queue.deviceJobs.count, Self.deviceJobsPerBatch)
                let taken = Array(queue.jobs.prefix(count)) + queue.deviceJobs.prefix(deviceCount)
                queue.jobs.removeFirst(count)
                queue.deviceJobs.removeFirst(deviceCount)
                queue.deviceRequests -= taken.reduce(0) { $0 + ($1.isDeviceRequest ? 1 : 0) }
                return (taken, queue.stopping)
            }
            if jobs.isEmpty {
                if stopping, let continuation = stopped.withLock({ $0.take() }) {
                    runBatch([Job(run: { try $0.transaction.removeNode($0.core.node) }, fail: { _ in })])
                    closeAllChannels()
                    continuation.resume()
                }
                return
            }
            runBatch(jobs)
        }
    }

    private func runBatch(_ jobs: [Job]) {
        let before = state.withLock { $0 }
        do {
            let (after, effects) = try run(jobs, from: before)
            state.withLock { $0 = after }
            for effect in effects { effect() }
            if lostNews.exchange(false, ordering: .relaxed) {
                runBatch([
                    Job(
                        run: { context in try context.handle(nil) },
                        fail: { [self] _ in lostNews.store(true, ordering: .relaxed) })
                ])
            }
            return
        } catch {
            let failure = error as? GatewayError ?? .storage("\(error)")
            // The store is unreachable: no job of the batch can succeed alone either; fail them all at once.
            if failure.isUnavailable {
                logger.error("store unavailable", metadata: ["error": "\(failure)", "jobs": "\(jobs.count)"])
                for job in jobs { job.fail(failure) }
                return
            }
            guard jobs.count > 1 else {
                logger.error("store transaction failed", metadata: ["error": "\(failure)"])
                jobs[0].fail(failure)
                return
            }
        }
        // One job spoiled the batch: run each alone.
        for job in jobs { runBatch([job]) }
    }

    private func run(_ jobs: [Job], from state: CoreState) throws -> (CoreState, [@Sendable () -> Void]) {
        let now = clock.wallMilliseconds
        return try store.write { transaction in
            var context = CoreContext(state: state, transaction: transaction, now: now, core: self)
            for job in jobs { try job.run(&context) }
            for (node, messages) in context.outbox.sorted(by: { $0.key < $1.key }) {
                try transaction.notify(node: node, messages, now: now)
            }
            return (context.state, context.effects)
        }
    }

    /// How long a node's lease runs past a sweep: three sweep intervals (a node missing three is taken for dead).
    var leaseMilliseconds: Int64 { Int64(max(limits.sweepIntervalSeconds, 1)) * 3000 }

    private func leaseJob(fresh: Bool) -> Job {
        Job(
            run: { context in
                let core = context.core
                try context.transaction.renewNode(
                    core.node, now: context.now, leaseUntil: context.now + core.leaseMilliseconds, fresh: fresh)
            },
            fail: { [logger] error in logger.warning("node lease not renewed", metadata: ["error": "\(error)"]) })
    }

    /// Messages from other nodes (`nil`: some may have been lost, so every channel here looks at the store; if
    /// that fails, the next batch that commits, or the next sweep, tries again).
    ///
    /// Messages are merged until the store thread takes them (one entry per device and kind, the highest sequence
    /// number kept), so memory is bounded by the devices named, however many messages arrive, and one job at a
    /// time waits in the queue, among the provider jobs (a flood of device requests does not hold it back).
    func received(_ messages: [NodeMessage]?) {
        guard let messages else {
            lostNews.store(true, ordering: .relaxed)
            submitNews(Job(run: { _ in }, fail: { _ in }))
            return
        }
        let first = inbox.withLock { box -> Bool in
            box.merge(messages)
            defer { box.queued = true }
            return !box.queued
        }
        guard first else { return }
        submitNews(
            Job(
                run: { context in
                    let taken = context.core.inbox.withLock { box -> [NodeMessage] in
                        defer { box = NodeInbox() }
                        return box.messages
                    }
                    try context.handle(taken)
                },
                fail: { [self] _ in
                    // What was taken is lost with the transaction: every channel looks at the store again.
                    inbox.withLock { $0.queued = false }
                    lostNews.store(true, ordering: .relaxed)
                }))
    }

    /// Queues news from other nodes with the provider jobs, never refused (at most one such job waits at a time).
    private func submitNews(_ job: Job) {
        let accepted = queue.withLock { queue -> Bool in
            guard !queue.stopping else { return false }
            queue.jobs.append(job)
            return true
        }
        if accepted { scheduleDrain() }
    }

    private func sweepJob() -> Job {
        Job(
            run: { context in
                let core = context.core
                try context.transaction.renewNode(
                    core.node, now: context.now, leaseUntil: context.now + core.leaseMilliseconds, fresh: false)
                let expired = try context.transaction.deleteExpired(now: context.now)
                if expired > 0 {
                    let metrics = context.core.metrics
                    context.effects.append { metrics.expired(count: expired) }
                }
                // Devices revoked from outside (the CLI) lose their open channel. A margin covers clock skew
                // between processes; closing twice does nothing.
                let since = context.state.lastRevocationCheck - 60_000
                context.state.lastRevocationCheck = context.now
                for deviceID in try context.transaction.devicesRevoked(since: since) {
                    context.endChannel(deviceID: deviceID, frame: ChannelFrame.revoked)
                }
            },
            fail: { _ in })
    }

    private func closeAllChannels() {
        let slots = state.withLock { state -> [ChannelSlot] in
            defer { state.channels.removeAll() }
            return Array(state.channels.values)
        }
        for slot in slots {
            slot.stream.write(ChannelFrame.shutdown)
            slot.stream.finish()
        }
        metrics.setConnectedDevices(0)
    }
}

/// Messages from other nodes waiting for the store thread, merged: its size is bounded by the devices named, not
/// by the number of messages.
package struct NodeInbox: Sendable {
    /// Highest sequence number announced per device.
    package private(set) var pending: [String: Int64] = [:]
    /// Channels to close (`replaced`, `revoked`), each once.
    package private(set) var closes: Set<NodeMessage> = []
    /// Whether a job to take them is queued.
    var queued = false

    /// Empty.
    package init() {}

    /// Adds messages.
    package mutating func merge(_ messages: [NodeMessage]) {
        for message in messages {
            if case .pending(let deviceID, let seq) = message {
                pending[deviceID] = max(pending[deviceID] ?? seq, seq)
            } else {
                closes.insert(message)
            }
        }
    }

    /// Closes first (a push for a channel closed meanwhile is not loaded), then the devices by id.
    package var messages: [NodeMessage] {
        closes.sorted { $0.line < $1.line }
            + pending.sorted { $0.key < $1.key }.map { .pending(deviceID: $0.key, seq: $0.value) }
    }
}

/// The delivery state of every connected device: a value, so a failed transaction can drop its changes.
struct CoreState: Sendable {
    var channels: [String: ChannelSlot] = [:]
    var nextEphemeralID: Int64 = StoredPush.ephemeralIDBase
    /// When the sweep last looked for devices revoked by other processes (UNIX milliseconds).
    var lastRevocationCheck: Int64 = 0
}

/// One connected device channel.
struct ChannelSlot: Sendable {
    var deviceID: String
    var stream: HTTP2Stream
    var delivery: DeviceDelivery
    /// The channel declared `rouse-features: webpush`: it reads `webpush` records.
    var webPush = false
    /// Its minimum urgency's rank (RFC 8030 §5.3; 0 very-low: everything).
    var minimumUrgency = 0

    /// Whether `push` may go out on this channel now: every APNs-style push; a WebPush message only if the channel
    /// reads them and its urgency is at least the channel's minimum.
    func accepts(_ push: StoredPush) -> Bool {
        !push.isWebPush || (webPush && push.priority >= minimumUrgency)
    }

    /// The lowest WebPush urgency rank a refill loads (4: none, for channels without the feature).
    var webPushMinimum: Int { webPush ? minimumUrgency : 4 }
}

/// What a job sees: the state draft, the open transaction, the batch's clock reading, and the effects to run
/// after COMMIT.
struct CoreContext {
    var state: CoreState
    let transaction: any GatewayStoreTransaction
    let now: Int64
    let core: GatewayCore
    var effects: [@Sendable () -> Void] = []
    /// Messages to other nodes, sent when the batch commits.
    var outbox: [String: [NodeMessage]] = [:]

    /// Carries out messages from other nodes (`nil`: refill every channel).
    mutating func handle(_ messages: [NodeMessage]?) throws {
        guard let messages else {
            for deviceID in state.channels.keys.sorted() { try storedElsewhere(deviceID: deviceID, seq: nil) }
            return
        }
        for message in messages {
            switch message {
            case .pending(let deviceID, let seq):
                try storedElsewhere(deviceID: deviceID, seq: seq)
            case .replaced(let deviceID, let channelID):
                guard state.channels[deviceID]?.delivery.channelID == channelID else { continue }
                endChannel(deviceID: deviceID, frame: ChannelFrame.replaced)
            case .revoked(let deviceID):
                endChannel(deviceID: deviceID, frame: ChannelFrame.revoked)
            }
        }
    }

    private mutating func storedElsewhere(deviceID: String, seq: Int64?) throws {
        guard var slot = state.channels[deviceID] else { return }
        if case .refill(let limit) = slot.delivery.storedElsewhere(seq: seq) { try refill(&slot, limit: limit) }
        state.channels[deviceID] = slot
    }
}
