import Logging
import RouseAPNs
import RouseClock
import RouseEventLoop
import RouseHTTP2
import Synchronization

/// Carries out a `PoolStateMachine`'s actions on Rouse's own HTTP/2 client: the native transport.
final class NativeEngine: PushEngine {
    private struct Shell: Sendable {
        var machine: PoolStateMachine
        var completions: [UInt64: PushCompletion] = [:]
        var clients: [PoolStateMachine.ConnectionID: HTTP2Client] = [:]
        /// Connections whose `.closed` event came before `connect` returned.
        var closedEarly: Set<PoolStateMachine.ConnectionID> = []
    }

    private let state: Mutex<Shell>
    /// The bulk connections' loop: the engine's own thread, or a loop its caller shares (``ownsLoop`` false).
    private let loop: EventLoop
    /// Whether the engine made `loop` (and stops it when it ends).
    private let ownsLoop: Bool
    /// The priority lane's connection runs on its own thread, so VoIP answers never wait behind bulk work.
    private let priorityLoop: EventLoop
    private let clientConfiguration: HTTP2ClientConfiguration
    private let authority: String
    private let clock: any RouseClock
    private let logger: Logger
    private let metrics: SenderMetrics
    private let ticker: Mutex<Task<Void, Never>?> = Mutex(nil)
    private let headerBlocks = Mutex(HeaderBlockCache())
    private let tickGate: TickGate

    init(
        configuration: APNsSenderConfiguration, signer: (@Sendable (Int64) -> String)?, clock: any RouseClock,
        logger: Logger, metrics: SenderMetrics, bulkLoop: EventLoop? = nil
    ) throws {
        var settings = configuration.pool
        settings.connections = max(1, configuration.connections)
        state = Mutex(
            Shell(machine: PoolStateMachine(settings: settings, signer: signer, seed: UInt64.random(in: 1...(.max)))))
        if let bulkLoop {
            loop = bulkLoop
            ownsLoop = false
        } else {
            loop = try EventLoop(name: "rouse-sender", clock: clock)
            loop.start()
            ownsLoop = true
        }
        priorityLoop = try EventLoop(name: "rouse-sender-voip", clock: clock)
        priorityLoop.start()
        var tls = TLSConfiguration()
        tls.trustRootsFile = configuration.trustRootsFile
        switch configuration.credentials {
        case .token: break
        case .certificatePEM(let certificate, let key):
            tls.certificateChainFile = certificate
            tls.privateKeyFile = key
        case .pkcs12(let file, let password):
            tls.pkcs12File = file
            tls.pkcs12Password = password
        }
        var client = HTTP2ClientConfiguration(
            host: configuration.endpoint.host, port: configuration.endpoint.port, tls: tls)
        client.connectTimeout = configuration.connectTimeout
        // The outcome needs only `apns-id`: other response headers are not turned into strings.
        client.keptResponseHeaders = ["apns-id"]
        clientConfiguration = client
        authority =
            configuration.endpoint.port == 443
            ? configuration.endpoint.host : "\(configuration.endpoint.host):\(configuration.endpoint.port)"
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
        let interval = configuration.tickInterval
        let gate = TickGate()
        tickGate = gate
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await clock.sleep(for: interval)
                gate.clear()
                guard let needed = self?.tick() else { return }
                // Nothing to time (no push unfinished, no PING out, no idle PINGs wanted): sleep until the next push.
                if !needed { await gate.park() }
            }
        }
        ticker.withLock { $0 = task }
    }

    /// One tick; whether the machine still wants ticks.
    private func tick() -> Bool {
        apply { $0.tick(now: PoolInstant(reading: self.clock)) }
        return state.withLock { $0.machine.needsTicks }
    }

    deinit {
        ticker.withLock { $0?.cancel() }
        tickGate.cancel()
        if ownsLoop { loop.stopAndWait() }
        priorityLoop.stopAndWait()
    }

    func submit(id: UInt64, push: APNsPush, lane: PushLane, deadline: Duration, completion: @escaping PushCompletion) {
        let now = PoolInstant(reading: clock)
        apply(registering: (id, completion)) { $0.submit(id: id, push: push, lane: lane, deadline: deadline, now: now) }
        tickGate.poke()
    }

    var unfinishedCount: Int { state.withLock { $0.machine.unfinishedCount } }

    var tokensMinted: Int { state.withLock { $0.machine.tokensMinted } }

    func shutdown() async {
        let now = PoolInstant(reading: clock)
        apply { $0.shutdown(now: now) }
        // Real time, whatever the sender's clock: a test's manual clock must not hold a shutdown for ever.
        let realTime = SystemClock()
        let giveUp = realTime.deadline(after: .seconds(5))
        while state.withLock({ !$0.clients.isEmpty || $0.machine.unfinishedCount > 0 }) {
            if realTime.now > giveUp { break }
            try? await Task.sleep(for: .milliseconds(1))
        }
        ticker.withLock { $0?.cancel() }
        tickGate.cancel()
        let clients = state.withLock { s in
            let all = Array(s.clients.values)
            s.clients.removeAll()
            return all
        }
        for client in clients { client.abort() }
    }

    // MARK: Shell

    /// Runs one machine step under the lock, then carries out its actions outside it: first the connection work,
    /// then the outcomes. The actions are walked in place (no second array of them, no copies of their pushes), and
    /// the first outcome's completion is held without an array: the common step has one action.
    private func apply(
        registering registration: (UInt64, PushCompletion)? = nil,
        _ step: (inout PoolStateMachine) -> [PoolStateMachine.Action]
    ) {
        var firstCompletion: PushCompletion?
        var moreCompletions: [PushCompletion?] = []
        var finishes = 0
        var clients: [PoolStateMachine.ConnectionID: HTTP2Client] = [:]
        var actions: [PoolStateMachine.Action] = []
        state.withLock { shell in
            if let registration { shell.completions[registration.0] = registration.1 }
            actions = step(&shell.machine)
            var needsClients = false
            for action in actions {
                switch action {
                case .finish(let pushID, _, _, _):
                    let completion = shell.completions.removeValue(forKey: pushID)
                    if finishes == 0 { firstCompletion = completion } else { moreCompletions.append(completion) }
                    finishes += 1
                case .send, .ping, .close, .abort:
                    needsClients = true
                case .connect:
                    break
                }
            }
            // A copy of the table (one retain): the work below runs outside the lock.
            if needsClients { clients = shell.clients }
        }
        if finishes < actions.count {
            for action in actions {
                switch action {
                case .finish: continue
                case .send(let id, _, _, _), .ping(let id), .close(let id), .abort(let id):
                    perform(action, client: clients[id])
                case .connect:
                    perform(action, client: nil)
                }
            }
        }
        guard finishes > 0 else { return }
        var index = 0
        for action in actions {
            guard case .finish(let pushID, let outcome, let attempts, let retries) = action else { continue }
            let completion = index == 0 ? firstCompletion : moreCompletions[index - 1]
            index += 1
            completion?(pushID, outcome, attempts, retries)
        }
    }

    private func perform(_ action: PoolStateMachine.Action, client: HTTP2Client?) {
        switch action {
        case .connect(let id, let priorityOnly):
            connect(id, on: priorityOnly ? priorityLoop : loop)
        case .send(let id, let pushID, let push, let authorization):
            guard let client else {
                apply {
                    $0.completed(
                        id, pushID: pushID, result: .notProcessed("no connection", goAwayReason: nil),
                        now: PoolInstant(reading: clock))
                }
                return
            }
            metrics.attempt()
            client.send(request(push, authorization: authorization)) { [weak self] result in
                guard let self else { return }
                let attempt: AttemptResult
                // Results that mean "this connection takes no more streams": the connection must leave the
                // rotation before the push is resent, or the resend would fail synchronously again (and recurse).
                var unusable = false
                switch result {
                case .response(let status, let headers, let body):
                    attempt = .response(
                        status: status, apnsID: headers.first { $0.name == "apns-id" }?.value, body: body)
                case .notProcessed(let reason):
                    attempt = .notProcessed(reason, goAwayReason: nil)
                    unusable = reason.hasPrefix("connection ") || reason.hasPrefix("nghttp2_submit_request")
                case .failed(let reason, let code):
                    attempt = .failed(reason)
                    unusable = code == nil
                }
                self.apply { machine in
                    if unusable { machine.connectionUnusable(id) }
                    return machine.completed(id, pushID: pushID, result: attempt, now: PoolInstant(reading: self.clock))
                }
            }
        case .ping:
            client?.ping()
        case .close(let id):
            if let client { client.close() } else { dropConnection(id) }
        case .abort(let id):
            logger.warning("connection declared dead (PING unanswered)", metadata: ["conn-id": "\(id)"])
            if let client { client.abort() } else { dropConnection(id) }
        case .finish:
            break
        }
    }

    private func dropConnection(_ id: PoolStateMachine.ConnectionID) {
        apply { $0.closed(id, now: PoolInstant(reading: clock)) }
    }

    /// The request for `push`: the fields every push of a bulk repeats come from a shared header block (encoded
    /// once per credential, topic, push type and priority); only `:path`'s token and the per-push fields are its own.
    private func request(_ push: APNsPush, authorization: String?) -> HTTP2ClientRequest {
        let block = headerBlocks.withLock { $0.block(for: push, authorization: authorization, authority: authority) }
        var headers: [HTTP2Header] = []
        if let apnsID = push.apnsID {
            // `.firstTimeOnly` in Apple's guidance: incremental indexing (each id is new).
            headers.append(HTTP2Header("apns-id", apnsID))
        }
        if let expiration = push.expiration { headers.append(HTTP2Header("apns-expiration", String(expiration))) }
        if let collapseID = push.collapseID { headers.append(HTTP2Header("apns-collapse-id", collapseID)) }
        return HTTP2ClientRequest(
            path: push.deviceToken, authority: authority, headers: headers, body: push.payload, shared: block)
    }

    private func connect(_ id: PoolStateMachine.ConnectionID, on loop: EventLoop) {
        let configuration = clientConfiguration
        let logger = self.logger
        metrics.connectionOpened()
        Task { [weak self] in
            do {
                let client = try await HTTP2Client.connect(configuration, on: loop, logger: logger) {
                    [weak self] event in
                    self?.handle(event, connection: id)
                }
                guard let self else {
                    client.close()
                    return
                }
                let orphan = self.state.withLock { shell -> Bool in
                    if shell.closedEarly.remove(id) != nil { return true }
                    shell.clients[id] = client
                    return false
                }
                if orphan { client.close() }
                logger.debug("connected", metadata: ["conn-id": "\(id)", "local": "\(client.localAddress)"])
                self.apply { $0.connected(id, now: PoolInstant(reading: self.clock)) }
            } catch {
                guard let self else { return }
                self.metrics.connectionClosed()
                logger.warning("connect failed", metadata: ["conn-id": "\(id)", "error": "\(error)"])
                self.apply { $0.connectFailed(id, error: "\(error)", now: PoolInstant(reading: self.clock)) }
            }
        }
    }

    private func handle(_ event: HTTP2ClientEvent, connection id: PoolStateMachine.ConnectionID) {
        let now = PoolInstant(reading: clock)
        switch event {
        case .settings(let limit):
            apply { $0.settingsChanged(id, maxConcurrentStreams: limit, now: now) }
        case .goAway(let code, let lastStreamID, let debugData):
            let reason = APNsErrorBody.parse(debugData)?.reason
            logger.info(
                "GOAWAY received",
                metadata: [
                    "conn-id": "\(id)", "code": "\(code)", "last-stream-id": "\(lastStreamID)",
                    "reason": "\(reason?.rawValue ?? String(decoding: debugData.prefix(200), as: UTF8.self))",
                ])
            apply { $0.goAway(id, reason: reason, now: now) }
        case .pingAcknowledged:
            state.withLock { $0.machine.pingAcknowledged(id, now: now) }
        case .closed(let reason):
            logger.debug("connection closed", metadata: ["conn-id": "\(id)", "reason": "\(reason)"])
            metrics.connectionClosed()
            state.withLock { shell in
                if shell.clients.removeValue(forKey: id) == nil { shell.closedEarly.insert(id) }
            }
            apply { $0.closed(id, now: now) }
        }
    }
}

/// The shared header blocks of the requests lately sent, most recent first (a bulk send uses one; a token refresh
/// or a mix of topics a few). Bounded: the oldest goes past `capacity`.
struct HeaderBlockCache {
    static let capacity = 8
    /// The header fields a push has of its own: in each request, not in a shared block.
    static let perPushFields: Set<String> = [":method", ":path", "apns-id", "apns-expiration", "apns-collapse-id"]

    private struct Entry {
        var authorization: String?
        var topic: String
        var pushType: APNsPushType
        var priority: APNsPriority?
        var block: HTTP2HeaderBlock
    }
    private var entries: [Entry] = []
    /// Blocks made so far (tests read it).
    private(set) var made = 0

    /// The block for `push`'s shared fields with `authorization`, made from `APNsPush.headerFields` (the one
    /// definition of the fields and of their HPACK indexing) the first time.
    mutating func block(for push: APNsPush, authorization: String?, authority: String) -> HTTP2HeaderBlock {
        for (index, entry) in entries.enumerated()
        where entry.authorization == authorization && entry.topic == push.topic && entry.pushType == push.pushType
            && entry.priority == push.priority
        {
            if index > 0 { entries.swapAt(0, index) }
            return entry.block
        }
        let shared = push.headerFields(authorization: authorization).filter { !Self.perPushFields.contains($0.name) }
        let block = HTTP2HeaderBlock(
            authority: authority, pathPrefix: APNsRules.devicePathPrefix,
            headers: shared.map { HTTP2Header($0.name, $0.value, neverIndex: $0.indexing == .never) })
        made += 1
        entries.insert(
            Entry(
                authorization: authorization, topic: push.topic, pushType: push.pushType, priority: push.priority,
                block: block), at: 0)
        if entries.count > Self.capacity { entries.removeLast() }
        return block
    }
}

/// Where the tick task of an idle pool sleeps until the next push: `poke` wakes it, or makes its next `park` return at
/// once (a push that came between the tick's look at the machine and its `park`).
final class TickGate: Sendable {
    private struct State {
        var parked: CheckedContinuation<Void, Never>?
        var cancelled = false
    }
    private let state = Mutex(State())
    /// A poke came since the last `clear`. Atomic, so that the pokes of a busy pool (one per push, while the tick
    /// task is awake) cost a load, not a lock: a poke that finds it set has nothing to do, since the poke that set it
    /// woke or will wake any parked task.
    private let poked = Atomic<Bool>(false)

    /// Forgets earlier pokes: called before the tick looks at the machine.
    func clear() { poked.store(false, ordering: .sequentiallyConsistent) }

    /// Waits for a poke (returns at once if one came since `clear`, or after `cancel`).
    func park() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if poked.load(ordering: .sequentiallyConsistent) || s.cancelled { return true }
                s.parked = c
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    /// A push arrived: wake the parked tick task.
    func poke() {
        if poked.exchange(true, ordering: .sequentiallyConsistent) { return }
        let parked = state.withLock { s -> CheckedContinuation<Void, Never>? in
            defer { s.parked = nil }
            return s.parked
        }
        parked?.resume()
    }

    /// The engine ends: wake the tick task for good.
    func cancel() {
        let parked = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.cancelled = true
            defer { s.parked = nil }
            return s.parked
        }
        parked?.resume()
    }
}
