import Logging
import RouseAgentCore
import RouseClock
import RouseCurl
import RouseWire

/// The libcurl shell around ``ChannelStateMachine``: opens `GET /device/v1/channel`, reads its records
/// (``ChannelRecord``, one JSON object per line), runs the single timer (backoff or heartbeat deadline) and
/// batches acknowledgements (`POST /device/v1/ack`, up to 32 ids or every 100 ms).
actor DeviceChannel {
    struct Events: Sendable {
        var push: @Sendable (AgentPush) async -> Void
        var state: @Sendable (ChannelStateMachine.State) async -> Void
        /// WebPush messages (the UnifiedPush distributor's hook). `nil`: the channel does not declare the
        /// `webpush` feature, so the gateway sends none (they would stay unacknowledged).
        var webPush: (@Sendable (ChannelRecord.WebPush) async -> Void)? = nil
    }

    private let api: GatewayAPI
    private let clock: any RouseClock
    private let credential: String?
    private let logger: Logger
    private let events: Events
    private var machine: ChannelStateMachine
    private var generation = 0
    private var connection: Task<Void, Never>?
    private var timer: Task<Void, Never>?
    /// When the timer is due (nil: none armed).
    private var timerDeadline: RouseInstant?
    private var pendingAcks: [String] = []
    private var ackFlush: Task<Void, Never>?
    /// When the network came back (for the bench's network-back-to-open figure).
    private(set) var reachableSince: RouseInstant?
    /// How long the last open took from reachability.
    private(set) var lastOpenAfterReachable: Duration?
    /// Channels opened so far.
    private(set) var opens = 0
    /// The minimum urgency declared to the gateway (RFC 8030 §5.3), when WebPush is read.
    private(set) var minimumUrgency = WebPushUrgency.veryLow
    /// The urgency the channel request under way declared (a change while it opens is sent once it is open).
    private var requestedUrgency: WebPushUrgency?
    /// The minimum urgency the gateway knows (from the open channel's request or an accepted `POST`); nil while no
    /// channel is open.
    private(set) var declaredUrgency: WebPushUrgency?

    init(
        api: GatewayAPI, credential: String?, backoff: ChannelStateMachine.Backoff, clock: any RouseClock,
        logger: Logger, events: Events
    ) {
        self.api = api
        self.clock = clock
        self.credential = credential
        self.logger = logger
        self.events = events
        self.machine = ChannelStateMachine(
            backoff: backoff, seed: UInt64.random(in: 1...UInt64.max), gateways: api.endpoint.baseURLs.count)
    }

    var state: ChannelStateMachine.State { machine.state }
    var reachable: Bool { machine.reachable }

    func reachability(_ usable: Bool) async {
        if usable && !machine.reachable { reachableSince = clock.now }
        logger.info("gateway reachability", metadata: ["reachable": "\(usable)"])
        await perform(machine.reachability(usable))
    }

    func sourceAddressChanged() async {
        logger.info("source address changed: reconnecting")
        await perform(machine.sourceAddressChanged())
    }

    func stop() async {
        await perform(machine.stop())
        await flushAcks()
    }

    /// Queues an acknowledgement.
    func ack(_ id: String) {
        pendingAcks.append(id)
        if pendingAcks.count >= 32 {
            ackFlush?.cancel()
            ackFlush = nil
            Task { await self.flushAcks() }
        } else if ackFlush == nil {
            let clock = clock
            ackFlush = Task {
                try? await clock.sleep(for: .milliseconds(100))
                guard !Task.isCancelled else { return }
                await self.flushAcks()
            }
        }
    }

    func flushAcks() async {
        ackFlush = nil
        guard !pendingAcks.isEmpty else { return }
        let ids = pendingAcks
        pendingAcks = []
        do {
            try await api.ack(ids, credential: credential)
            logger.debug("acknowledged", metadata: ["count": "\(ids.count)"])
        } catch {
            // Kept for the next attempt; the gateway re-sends unacknowledged pushes anyway (de-duplicated).
            logger.warning("ack failed", metadata: ["error": "\(error)", "count": "\(ids.count)"])
            pendingAcks = ids + pendingAcks
        }
    }

    /// Changes the minimum urgency: sent on the open channel now, and with every channel opened later. Messages
    /// below it stay at the gateway until it drops or they expire.
    func setMinimumUrgency(_ urgency: WebPushUrgency) async {
        guard events.webPush != nil, urgency != minimumUrgency else { return }
        minimumUrgency = urgency
        guard machine.state == .open else { return }
        await sendMinimumUrgency()
    }

    /// `POST /device/v1/urgency` with the minimum urgency now (on the open channel).
    private func sendMinimumUrgency() async {
        let urgency = minimumUrgency
        do {
            try await api.setMinimumUrgency(urgency, credential: credential)
            declaredUrgency = urgency
            logger.info("minimum urgency sent", metadata: ["urgency": "\(urgency.rawValue)"])
        } catch {
            // The next channel carries it in its request.
            logger.warning("minimum urgency not sent", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Actions

    private func perform(_ actions: [ChannelStateMachine.Action]) async {
        for action in actions {
            switch action {
            case .connect: connect()
            case .close:
                generation += 1
                connection?.cancel()
                connection = nil
            case .armTimer(let delay):
                let deadline = clock.now.advanced(by: delay)
                let pending = timerDeadline
                timerDeadline = deadline
                // Moved later (the heartbeat deadline, pushed back by every record): the sleeping timer stays and
                // sleeps on to the new deadline when it wakes. A cancelled sleep still wakes the process at its
                // old deadline, so re-creating it for each record would double the idle channel's wake-ups.
                if timer != nil, let pending, pending <= deadline { continue }
                timer?.cancel()
                let clock = clock
                timer = Task {
                    while let due = self.timerDeadline, clock.now < due {
                        try? await clock.sleep(until: due, tolerance: nil)
                        guard !Task.isCancelled else { return }
                    }
                    guard !Task.isCancelled else { return }
                    await self.timerFired()
                }
            case .cancelTimer:
                timer?.cancel()
                timer = nil
                timerDeadline = nil
            }
        }
        await events.state(machine.state)
    }

    /// The single timer fired (a cancelled timer never gets here).
    private func timerFired() async {
        timer = nil
        timerDeadline = nil
        await perform(machine.timerFired())
    }

    private func connect() {
        generation += 1
        let current = generation
        connection?.cancel()
        api.choice.index = machine.gateway
        let api = api
        let credential = credential
        let urgency = events.webPush == nil ? nil : minimumUrgency
        requestedUrgency = urgency
        declaredUrgency = nil
        connection = Task {
            do {
                let response = try await api.curl.stream(
                    api.channelRequest(credential: credential, webPushUrgency: urgency))
                guard response.head.status == 200 else {
                    var body: [UInt8] = []
                    for try await chunk in response.body where body.count < 4096 { body += chunk }
                    let fatal = response.head.status == 403 || response.head.status == 401
                    await self.failed(
                        generation: current, fatal: fatal,
                        reason: "status \(response.head.status) \(String(decoding: body, as: UTF8.self))")
                    return
                }
                var splitter = ChannelLineSplitter()
                for try await chunk in response.body {
                    for line in splitter.append(chunk) {
                        let record: ChannelRecord
                        do throws(ChannelRecordError) {
                            record = try ChannelRecord(line: line)
                        } catch {
                            self.skipped(error, generation: current)
                            continue
                        }
                        await self.record(record, generation: current)
                    }
                }
                await self.failed(generation: current, fatal: false, reason: "channel ended")
            } catch {
                if !Task.isCancelled { await self.failed(generation: current, fatal: false, reason: "\(error)") }
            }
        }
    }

    private func failed(generation failedGeneration: Int, fatal: Bool, reason: String) async {
        guard failedGeneration == generation else { return }
        logger.warning("channel failed", metadata: ["reason": "\(reason)", "fatal": "\(fatal)"])
        await perform(machine.failed(fatal ? .fatal : .retryable))
    }

    /// A line that is not a record this version reads: skipped (a push in it stays unacknowledged).
    private func skipped(_ error: ChannelRecordError, generation lineGeneration: Int) {
        guard lineGeneration == generation else { return }
        logger.warning("channel record skipped", metadata: ["error": "\(error)"])
    }

    private func record(_ record: ChannelRecord, generation recordGeneration: Int) async {
        guard recordGeneration == generation else { return }
        switch record {
        case .hello(let hello):
            let heartbeat = hello.heartbeat
            guard ChannelStateMachine.acceptsHeartbeat(heartbeat) else {
                logger.error(
                    "gateway announced an out-of-range heartbeat: channel closed",
                    metadata: ["heartbeat": "\(heartbeat)", "max": "\(ChannelStateMachine.maxHeartbeatSeconds)"])
                await perform(machine.opened(heartbeatSeconds: heartbeat))
                return
            }
            opens += 1
            if let since = reachableSince {
                lastOpenAfterReachable = since.duration(to: clock.now)
                reachableSince = nil
            }
            logger.info("channel open", metadata: ["heartbeat": "\(heartbeat)"])
            await perform(machine.opened(heartbeatSeconds: heartbeat))
            if !pendingAcks.isEmpty { await flushAcks() }
            declaredUrgency = requestedUrgency
            if let requested = requestedUrgency, requested != minimumUrgency { await sendMinimumUrgency() }
        case .push(let push):
            await perform(machine.recordReceived())
            await events.push(AgentPush(push))
        case .webpush(let message):
            await perform(machine.recordReceived())
            logger.debug(
                "webpush message",
                metadata: [
                    "id": "\(message.id)", "subscription": "\(message.subscription.prefix(8))",
                    "urgency": "\(message.urgency.rawValue)", "bytes": "\(message.payload.utf8.count)",
                ])
            if let hook = events.webPush { await hook(message) }
        case .heartbeat, .unknown:
            await perform(machine.recordReceived())
        case .replaced, .shutdown:
            logger.info("channel closed by the gateway", metadata: ["record": "\(record.type)"])
            await perform(machine.closedByGateway())
        case .revoked:
            logger.error("device revoked: channel stopped")
            await perform(machine.failed(.fatal))
        }
    }
}

extension AgentPush {
    /// A push from the channel (no push type: `alert`, as APNs assumes).
    init(_ push: ChannelRecord.Push) {
        self.init(
            id: push.id, pushType: push.pushType ?? "alert", topic: push.topic, payload: push.payload,
            apnsID: push.apnsID, expiration: push.expiration, receivedAt: push.receivedAt, collapseID: push.collapseID)
    }
}
