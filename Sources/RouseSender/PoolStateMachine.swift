import RouseAPNs
import RouseClock

/// A point in time as the pool sees it: monotonic for deadlines and liveness, wall clock for token `iat`.
public struct PoolInstant: Sendable, Hashable {
    /// Monotonic time since an arbitrary origin.
    public var monotonic: Duration
    /// Wall-clock time.
    public var wall: APNsTime

    /// An instant.
    public init(monotonic: Duration, wall: APNsTime) {
        self.monotonic = monotonic
        self.wall = wall
    }

    /// Now on `clock`: its monotonic offset and its wall clock.
    public init(reading clock: some RouseClock) {
        self.init(monotonic: clock.now.offset, wall: APNsTime(milliseconds: clock.wallMilliseconds))
    }

    /// This instant moved forward by `duration` on both clocks.
    public func advanced(by duration: Duration) -> PoolInstant {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return PoolInstant(monotonic: monotonic + duration, wall: wall.adding(milliseconds: milliseconds))
    }
}

/// Which queue a push waits in. Priority pushes (VoIP) always go first and have streams held back for them,
/// so they never wait behind a bulk send.
public enum PushLane: Sendable, Hashable {
    /// VoIP and other urgent pushes.
    case priority
    /// Bulk sends (background pushes and the like).
    case bulk
}

/// Settings of the pool state machine.
public struct PoolSettings: Sendable {
    /// Connections to keep while there is work.
    public var connections: Int = 1
    /// Retry rules.
    public var retry = SenderRetryPolicy()
    /// Token rules (token auth only).
    public var tokenPolicy = TokenRefreshPolicy()
    /// PING rules (the defaults find a blackholed busy connection in about 1.6 s).
    public var busyQuietPeriod: Duration = .milliseconds(500)
    /// PING interval on an idle connection.
    public var idlePingInterval: Duration = .seconds(60)
    /// Whether idle connections get PINGs at all. `false` (rouse-pushd): an idle pool sleeps, the shell stops its
    /// ticks, and a connection's health is checked on use (a busy connection quiet for `busyQuietPeriod` gets a PING).
    public var pingWhileIdle = true
    /// How long a PING may stay unanswered before the connection is declared dead.
    public var pingTimeout: Duration = .seconds(1)
    /// Consecutive failed connects after which waiting pushes fail (`failed(connect, processed: no)`).
    public var maxConnectFailures = 3
    /// Share of each connection's stream limit held back for the priority lane (when the limit is ≥ 20).
    public var priorityReserveFraction = 0.05
    /// Open one extra connection that only priority pushes use, so a VoIP push never queues behind bulk
    /// requests in the server's input (head-of-line blocking on a shared TCP connection).
    public var dedicatedPriorityConnection = true

    /// Defaults.
    public init() {}
}

/// The pool of connections for one credential and endpoint, as a value-type state machine: events in,
/// actions out. It owns the lanes, the per-connection stream accounting, GOAWAY draining, PING liveness,
/// token refresh and the retry decisions; the I/O shell only carries out actions.
public struct PoolStateMachine: Sendable {
    /// A connection of the pool.
    public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
        /// Unique within the pool.
        public var raw: Int
        /// `conn-N`.
        public var description: String { "conn-\(raw)" }
    }

    /// What the shell must do.
    public enum Action: Sendable {
        /// Open a connection (`priorityOnly`: the priority lane's own); report `connected` or `connectFailed`.
        case connect(ConnectionID, priorityOnly: Bool)
        /// Put a request on the connection; report `completed`.
        case send(ConnectionID, pushID: UInt64, push: APNsPush, authorization: String?)
        /// Deliver the push's outcome to its caller.
        case finish(pushID: UInt64, outcome: PushOutcome, attempts: Int, retries: Int)
        /// Send a PING.
        case ping(ConnectionID)
        /// Close gracefully (nothing in flight).
        case close(ConnectionID)
        /// Drop the connection at once (it is dead).
        case abort(ConnectionID)
    }

    enum Phase: Sendable, Hashable {
        case connecting
        case ready
        /// GOAWAY received, or its token may not be switched: no new streams; closed when empty.
        case draining
        /// Close or abort issued; waiting for `closed`.
        case closing
    }

    struct Connection: Sendable {
        var phase: Phase = .connecting
        var limit = 1
        var inFlight = 0
        var token: ConnectionToken?
        var health: ConnectionHealth?
        var consecutiveErrors = 0
        var goAwayReason: APNsReason?
        var priorityOnly = false
    }

    struct Pending: Sendable {
        var push: APNsPush
        var lane: PushLane
        var deadline: Duration
        var attempts = 0
        var unprocessedResends = 0
        var statusRetries = 0
        var tokenRetried = false
        var tokenGeneration = 0
        var notBefore: Duration = .zero
        var lastRejection: (reason: APNsReason, timestamp: Int64?)?

        var retries: Int { unprocessedResends + statusRetries + (tokenRetried ? 1 : 0) }
    }

    /// Settings.
    public let settings: PoolSettings
    private let signer: (@Sendable (Int64) -> String)?
    private var tokens: ProviderTokenState?
    private var pending: [UInt64: Pending] = [:]
    private var priorityQueue = FIFO<UInt64>()
    private var bulkQueue = FIFO<UInt64>()
    private var delayed: [UInt64] = []
    private var inFlight: [UInt64: ConnectionID] = [:]
    private var connections: [ConnectionID: Connection] = [:]
    private var connectionOrder: [ConnectionID] = []
    private var nextConnection = 1
    private var connectFailures = 0
    private var reconnectAt: Duration = .zero
    private var lastConnectError = ""
    private var jitter: JitterSource
    private var isShutDown = false

    /// A pool. `signer` mints a provider token for an `iat` (token auth); `nil` for certificate auth.
    public init(settings: PoolSettings, signer: (@Sendable (Int64) -> String)?, seed: UInt64 = 0x5EED) {
        self.settings = settings
        self.signer = signer
        self.tokens = signer == nil ? nil : ProviderTokenState(policy: settings.tokenPolicy)
        self.jitter = JitterSource(seed: seed)
    }

    // MARK: Inspection

    /// Pushes not finished yet (queued, waiting for a retry, or in flight).
    public var unfinishedCount: Int { pending.count }
    /// Connections that are open or opening, by phase name, for logs and tests.
    public var connectionCount: Int { connections.count }
    /// Tokens minted so far.
    public var tokensMinted: Int { tokens?.mints ?? 0 }
    /// The stream limit and in-flight count of each connection.
    public var connectionLoads: [(id: ConnectionID, limit: Int, inFlight: Int)] {
        connectionOrder.compactMap { id in connections[id].map { (id, $0.limit, $0.inFlight) } }
    }
    /// Whether `tick` has anything to do: pushes unfinished (deadlines, backoffs, reconnects), streams in flight or a
    /// PING awaiting its answer, or idle connections to PING. False lets the shell stop its timer until the next push.
    public var needsTicks: Bool {
        if !pending.isEmpty { return true }
        for connection in connections.values {
            // Streams in flight (a push past its deadline may still hold one): the busy-connection PING finds a dead
            // connection.
            if connection.health?.pingSentAt != nil || connection.inFlight > 0 { return true }
            if settings.pingWhileIdle && (connection.phase == .ready || connection.phase == .draining) { return true }
        }
        return false
    }
    /// The token a connection uses, if any.
    public func token(of id: ConnectionID) -> ConnectionToken? { connections[id]?.token }

    // MARK: Events

    /// A new push with id `id` (unique, chosen by the caller).
    public mutating func submit(
        id: UInt64, push: APNsPush, lane: PushLane, deadline: Duration, now: PoolInstant
    ) -> [Action] {
        if isShutDown {
            return [.finish(pushID: id, outcome: .failed(.shutdown, processed: .no), attempts: 0, retries: 0)]
        }
        pending[id] = Pending(push: push, lane: lane, deadline: now.monotonic + deadline)
        switch lane {
        case .priority: priorityQueue.append(id)
        case .bulk: bulkQueue.append(id)
        }
        var actions: [Action] = []
        dispatch(now: now, into: &actions)
        return actions
    }

    /// A connection finished its handshake and got the server's SETTINGS.
    public mutating func connected(_ id: ConnectionID, now: PoolInstant) -> [Action] {
        guard var connection = connections[id] else { return [.close(id)] }
        connectFailures = 0
        if connection.phase == .connecting { connection.phase = .ready }
        connection.health = ConnectionHealth(
            now: now.monotonic, busyQuietPeriod: settings.busyQuietPeriod,
            idleInterval: settings.pingWhileIdle ? settings.idlePingInterval : .seconds(1 << 40),
            pingTimeout: settings.pingTimeout)
        connections[id] = connection
        var actions: [Action] = []
        closeIfDrained(id, into: &actions)
        dispatch(now: now, into: &actions)
        return actions
    }

    /// A connection could not be made.
    public mutating func connectFailed(_ id: ConnectionID, error: String, now: PoolInstant) -> [Action] {
        connections[id] = nil
        connectionOrder.removeAll { $0 == id }
        connectFailures += 1
        lastConnectError = error
        let exponent = min(connectFailures - 1, 5)
        reconnectAt = now.monotonic + min(.milliseconds(100) * (1 << exponent), .seconds(2))
        var actions: [Action] = []
        let anyReady = connections.values.contains { $0.phase == .ready }
        if connectFailures >= settings.maxConnectFailures && !anyReady {
            for id in Array(pending.keys).sorted() where inFlight[id] == nil {
                finish(id, .failed(.connect(error), processed: .no), into: &actions)
            }
        }
        dispatch(now: now, into: &actions)
        return actions
    }

    /// The server's stream limit (first SETTINGS and every change).
    public mutating func settingsChanged(_ id: ConnectionID, maxConcurrentStreams: UInt32, now: PoolInstant) -> [Action]
    {
        guard var connection = connections[id] else { return [] }
        connection.limit = Int(min(maxConcurrentStreams, 100_000))
        connection.health?.activity(now: now.monotonic)
        connections[id] = connection
        var actions: [Action] = []
        dispatch(now: now, into: &actions)
        return actions
    }

    /// GOAWAY received: no new streams on this connection; a replacement opens if there is work.
    public mutating func goAway(_ id: ConnectionID, reason: APNsReason?, now: PoolInstant) -> [Action] {
        guard var connection = connections[id] else { return [] }
        if connection.phase == .ready || connection.phase == .connecting { connection.phase = .draining }
        connection.goAwayReason = reason
        connections[id] = connection
        var actions: [Action] = []
        closeIfDrained(id, into: &actions)
        dispatch(now: now, into: &actions)
        return actions
    }

    /// The transport said the connection cannot take new streams (closed, or going away before the GOAWAY
    /// event arrived): stop using it. It closes when its streams are done.
    public mutating func connectionUnusable(_ id: ConnectionID) {
        guard var connection = connections[id] else { return }
        if connection.phase == .ready || connection.phase == .connecting { connection.phase = .draining }
        connections[id] = connection
    }

    /// A PING was acknowledged.
    public mutating func pingAcknowledged(_ id: ConnectionID, now: PoolInstant) {
        connections[id]?.health?.activity(now: now.monotonic)
    }

    /// The connection is gone. Its streams are not finished here: the transport reports each of them (a send
    /// that was still on its way to the connection comes back "not processed" later).
    public mutating func closed(_ id: ConnectionID, now: PoolInstant) -> [Action] {
        connections[id] = nil
        connectionOrder.removeAll { $0 == id }
        var actions: [Action] = []
        dispatch(now: now, into: &actions)
        return actions
    }

    /// One attempt of push `pushID` on connection `id` ended.
    public mutating func completed(
        _ id: ConnectionID, pushID: UInt64, result: AttemptResult, now: PoolInstant
    ) -> [Action] {
        var actions: [Action] = []
        handleCompletion(id, pushID: pushID, result: result, now: now, into: &actions)
        closeIfDrained(id, into: &actions)
        dispatch(now: now, into: &actions)
        return actions
    }

    private mutating func handleCompletion(
        _ id: ConnectionID, pushID: UInt64, result: AttemptResult, now: PoolInstant, into actions: inout [Action]
    ) {
        var connection = connections[id]
        connection?.inFlight -= 1
        if case .response = result { connection?.health?.activity(now: now.monotonic) }
        inFlight[pushID] = nil
        guard var push = pending[pushID] else {
            if let connection { connections[id] = connection }
            return
        }
        var result = result
        if case .notProcessed(let detail, nil) = result, let reason = connection?.goAwayReason {
            result = .notProcessed(detail, goAwayReason: reason)
        }
        var backoff = Duration.zero
        if case .response(let status, _, _) = result, status == 429 || status >= 500 {
            let errors = (connection?.consecutiveErrors ?? 0) + 1
            connection?.consecutiveErrors = errors
            backoff = settings.retry.backoff(errors: max(errors, push.statusRetries + 1), unit: jitter.unit())
        } else if case .response(200, _, _) = result {
            connection?.consecutiveErrors = 0
        }
        let decision = settings.retry.decide(
            result, unprocessedResends: push.unprocessedResends, statusRetries: push.statusRetries,
            tokenRetried: push.tokenRetried, backoff: backoff, remaining: push.deadline - now.monotonic)
        switch decision {
        case .finish(let outcome):
            if let connection { connections[id] = connection }
            finish(pushID, outcome, into: &actions)
        case .resend:
            push.unprocessedResends += 1
            pending[pushID] = push
            requeue(pushID, lane: push.lane)
            if let connection { connections[id] = connection }
        case .resendAfter(let delay):
            if case .response(_, _, let body) = result, let parsed = APNsErrorBody.parse(body) {
                push.lastRejection = (parsed.reason, parsed.timestamp)
            }
            push.statusRetries += 1
            push.notBefore = now.monotonic + delay
            pending[pushID] = push
            delayed.append(pushID)
            if let connection { connections[id] = connection }
        case .resendWithNewToken:
            push.tokenRetried = true
            push.lastRejection = (.expiredProviderToken, nil)
            pending[pushID] = push
            if let signer { tokens?.expired(generation: push.tokenGeneration, now: now.wall, signer: signer) }
            if var c = connection {
                if let token = c.token, tokens?.maySwitch(token, now: now.wall) == true {
                    c.token = nil
                } else if c.phase == .ready {
                    // Switching now would break the 20-minute rule: drain it and use a fresh connection.
                    c.phase = .draining
                }
                connections[id] = c
            }
            requeue(pushID, lane: push.lane)
        }
    }

    /// Time passed: deadlines, backoff timers, PINGs, reconnects.
    public mutating func tick(now: PoolInstant) -> [Action] {
        var actions: [Action] = []
        if !delayed.isEmpty {
            var still: [UInt64] = []
            for pushID in delayed {
                guard let push = pending[pushID] else { continue }
                if push.notBefore <= now.monotonic { requeue(pushID, lane: push.lane) } else { still.append(pushID) }
            }
            delayed = still
        }
        for (pushID, push) in pending where push.deadline <= now.monotonic {
            if inFlight[pushID] != nil {
                finish(pushID, .failed(.deadline("no answer before the deadline"), processed: .unknown), into: &actions)
            } else if let rejection = push.lastRejection {
                finish(pushID, .rejected(reason: rejection.reason, timestamp: rejection.timestamp), into: &actions)
            } else {
                let detail = lastConnectError.isEmpty ? "not sent before the deadline" : lastConnectError
                finish(pushID, .failed(.deadline(detail), processed: .no), into: &actions)
            }
        }
        for id in connectionOrder {
            guard var connection = connections[id], connection.phase == .ready || connection.phase == .draining,
                var health = connection.health
            else { continue }
            switch health.tick(now: now.monotonic, busy: connection.inFlight > 0) {
            case .none: break
            case .sendPing: actions.append(.ping(id))
            case .declareDead:
                connection.phase = .closing
                actions.append(.abort(id))
            }
            connection.health = health
            connections[id] = connection
        }
        dispatch(now: now, into: &actions)
        return actions
    }

    /// Stop: waiting pushes fail with `shutdown`; in-flight ones finish; connections close when empty.
    public mutating func shutdown(now: PoolInstant) -> [Action] {
        isShutDown = true
        var actions: [Action] = []
        for pushID in Array(pending.keys).sorted() where inFlight[pushID] == nil {
            finish(pushID, .failed(.shutdown, processed: .no), into: &actions)
        }
        for id in connectionOrder {
            guard var connection = connections[id] else { continue }
            if connection.phase == .connecting || connection.phase == .ready { connection.phase = .draining }
            connections[id] = connection
            closeIfDrained(id, into: &actions)
        }
        return actions
    }

    // MARK: Internals

    private mutating func requeue(_ pushID: UInt64, lane: PushLane) {
        switch lane {
        case .priority: priorityQueue.prepend(pushID)
        case .bulk: bulkQueue.prepend(pushID)
        }
    }

    private mutating func finish(_ pushID: UInt64, _ outcome: PushOutcome, into actions: inout [Action]) {
        guard let push = pending.removeValue(forKey: pushID) else { return }
        actions.append(.finish(pushID: pushID, outcome: outcome, attempts: push.attempts, retries: push.retries))
    }

    private mutating func closeIfDrained(_ id: ConnectionID, into actions: inout [Action]) {
        guard var connection = connections[id], connection.phase == .draining, connection.inFlight <= 0 else { return }
        connection.phase = .closing
        connections[id] = connection
        actions.append(.close(id))
    }

    private func reserve(_ limit: Int) -> Int {
        limit >= 20 ? max(1, Int(Double(limit) * settings.priorityReserveFraction)) : 0
    }

    /// The ready connection with the most free streams for `lane` (priority pushes prefer their own).
    private func pickConnection(for lane: PushLane) -> ConnectionID? {
        var best: ConnectionID?
        var bestFree = 0
        if lane == .priority {
            for id in connectionOrder {
                guard let c = connections[id], c.phase == .ready, c.priorityOnly, c.inFlight < c.limit else { continue }
                return id
            }
        }
        for id in connectionOrder {
            guard let c = connections[id], c.phase == .ready, lane == .priority || !c.priorityOnly else { continue }
            let free = c.limit - c.inFlight - (lane == .bulk ? reserve(c.limit) : 0)
            if free > bestFree {
                best = id
                bestFree = free
            }
        }
        return best
    }

    private mutating func openConnection(priorityOnly: Bool, into actions: inout [Action]) {
        let id = ConnectionID(raw: nextConnection)
        nextConnection += 1
        var connection = Connection()
        connection.priorityOnly = priorityOnly
        connections[id] = connection
        connectionOrder.append(id)
        actions.append(.connect(id, priorityOnly: priorityOnly))
    }

    /// Pops finished or in-flight ids off the head of both queues (they are left behind by deadlines and failures).
    /// A `mutating` method on purpose: a non-mutating one taking `&priorityQueue` made Swift copy the whole machine
    /// (retaining every table) on each dispatch to keep the two accesses to `self` exclusive.
    private mutating func dropStaleHeads() {
        while let head = priorityQueue.first, pending[head] == nil || inFlight[head] != nil {
            _ = priorityQueue.popFirst()
        }
        while let head = bulkQueue.first, pending[head] == nil || inFlight[head] != nil { _ = bulkQueue.popFirst() }
    }

    private mutating func dispatch(now: PoolInstant, into actions: inout [Action]) {
        if isShutDown { return }
        dropStaleHeads()
        if !(priorityQueue.isEmpty && bulkQueue.isEmpty) && now.monotonic >= reconnectAt {
            let dedicated = settings.dedicatedPriorityConnection
            var live = 0
            var livePriority = 0
            for c in connections.values where c.phase == .connecting || c.phase == .ready {
                if c.priorityOnly { livePriority += 1 } else { live += 1 }
            }
            if dedicated && !priorityQueue.isEmpty && livePriority == 0 {
                openConnection(priorityOnly: true, into: &actions)
            }
            if !bulkQueue.isEmpty || !dedicated {
                while live < settings.connections {
                    openConnection(priorityOnly: false, into: &actions)
                    live += 1
                }
            }
        }
        while true {
            let lane: PushLane
            if !priorityQueue.isEmpty {
                lane = .priority
            } else if !bulkQueue.isEmpty {
                lane = .bulk
            } else {
                return
            }
            guard let id = pickConnection(for: lane) else { return }
            let popped = lane == .priority ? priorityQueue.popFirst() : bulkQueue.popFirst()
            // The pending entry is updated in place (through its index): copying it out and back cost two copies
            // of the push, with their retains, on every send.
            guard let pushID = popped, let entry = pending.index(forKey: pushID), inFlight[pushID] == nil else {
                continue
            }
            guard var connection = connections[id] else { return }
            var authorization: String?
            if let signer, var tokens {
                let token = tokens.token(for: connection.token, now: now.wall, signer: signer)
                self.tokens = tokens
                connection.token = token
                pending.values[entry].tokenGeneration = token.generation
                authorization = token.jwt
            }
            pending.values[entry].attempts += 1
            connection.inFlight += 1
            connections[id] = connection
            inFlight[pushID] = id
            actions.append(.send(id, pushID: pushID, push: pending.values[entry].push, authorization: authorization))
        }
    }
}
