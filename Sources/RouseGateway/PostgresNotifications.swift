import Crypto
import FoundationEssentials
import Logging
import RouseClock
import RouseEventLoop
import RousePostgres
import RouseText
import Synchronization

/// How a gateway node hears from the others sharing its PostgreSQL store: `LISTEN` on a channel of its own
/// (`rouse_node_<id>`), on a connection of its own, whose socket waits on an ``EventLoop`` with no timer: an idle
/// node does not wake for this. Other nodes send `NOTIFY` inside their transaction, so a message arrives when, and
/// only if, what it announces is committed.
///
/// When the connection breaks, messages sent meanwhile are lost: the listener reconnects (backing off from 250 ms
/// to 5 s, a loop timer armed only while PostgreSQL is unreachable) and, once listening again, tells the core to
/// look at the store for every channel it holds (`received(nil)`).
///
/// The loop is its own unless one is given (the gateway does not give one). Connecting blocks (libpq's
/// `PQconnectdb`, up to the configured connect timeout), so a given loop must be one that may wait that long: not a
/// daemon's executor loop, nor an HTTP/2 server's, nor the store's, whose heartbeats and sweeps would wait behind
/// every reconnect attempt while PostgreSQL is away.
final class PostgresNotifications: Sendable {
    /// The channel that node `node` listens on.
    static func channel(_ node: String) -> String { "rouse_node_" + node }

    private let loop: EventLoop
    private let ownsLoop: Bool
    private let listener: NotificationListener
    private let stopping = Atomic<Bool>(false)

    /// Starts listening for `node` (on `first`, the connection ``claim(settings:node:)`` made, if given); `deliver`
    /// gets the messages of each notification, or `nil` after a loss. The reconnect backoff runs on `clock`.
    init(
        settings: PostgresSettings, node: String, clusterKey: [UInt8], first: Claim? = nil, metrics: GatewayMetrics,
        logger: Logger, clock: any RouseClock = SystemClock(), on loop: EventLoop? = nil,
        deliver: @escaping @Sendable ([NodeMessage]?) -> Void
    ) throws(GatewayError) {
        if let loop {
            self.loop = loop
            ownsLoop = false
        } else {
            do {
                self.loop = try EventLoop(name: "rouse-gateway-listen", clock: clock, mayBlock: true)
            } catch {
                throw .startup("\(error)")
            }
            ownsLoop = true
            self.loop.start()
        }
        let listener = NotificationListener(
            loop: self.loop, settings: settings, node: node,
            // What was sealed before this node listened was meant for an earlier run of it (a capture replayed
            // after a restart): refused.
            opener: NodeMessageSeal.Opener(key: clusterKey, node: node, notBefore: clock.wallMilliseconds),
            clock: clock, metrics: metrics, logger: logger, deliver: deliver)
        self.listener = listener
        let handover = Handover(first)
        self.loop.execute { listener.connect(first: handover.value) }
    }

    /// The node's first connection, made before the node starts (before it takes over the channels its id held):
    /// `GatewayError.isNodeInUse` is thrown when a live node holds the id, so a second node with the same id stops
    /// with a clear error instead of the two clearing each other's channels; any other failure is returned (the
    /// listener retries it, as after a loss).
    static func claim(settings: PostgresSettings, node: String) throws(GatewayError) -> Claim {
        let first = Result { () throws(GatewayError) in try NotificationListener.open(settings: settings, node: node) }
        if case .failure(let error) = first, error.isNodeInUse || error.isBadConfiguration { throw error }
        return Claim(result: first)
    }

    /// The outcome of ``claim(settings:node:)``, handed to the listener.
    struct Claim {
        fileprivate let result: Result<Connections, GatewayError>
    }

    /// A node's two connections: `lock` holds its id's lock in an open transaction, `listen` its `LISTEN`.
    struct Connections {
        let lock: PostgresConnection
        let listen: PostgresConnection
    }

    /// Hands the first connection to the loop's thread, which alone uses it from then on (hence `@unchecked`).
    private final class Handover: @unchecked Sendable {
        let value: Result<Connections, GatewayError>?
        init(_ claim: Claim?) { value = claim?.result }
    }

    /// Stops listening (closes the connection, cancels a pending reconnect) and, when the loop is its own, stops it.
    func stop() async {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        let listener = self.listener
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                listener.close()
                continuation.resume()
            }
        }
        // The loop has nothing left to do: it ends at once.
        if ownsLoop { loop.stopAndWait() }
    }
}

/// The `LISTEN` connection and its reconnects, on the loop's thread only (hence `@unchecked Sendable`: no lock, one
/// thread).
private final class NotificationListener: EventLoopFDHandler, @unchecked Sendable {
    private let loop: EventLoop
    private let settings: PostgresSettings
    private let node: String
    private var opener: NodeMessageSeal.Opener
    private let clock: any RouseClock
    /// Messages refused so far (logged at the 1st, 2nd, 4th, 8th…: a role that floods NOTIFY does not flood the log;
    /// the metric counts each).
    private var refused: UInt64 = 0
    private let metrics: GatewayMetrics
    private let logger: Logger
    private let deliver: @Sendable ([NodeMessage]?) -> Void
    private var connection: PostgresConnection?
    /// The connection holding the id's lock (its end ends the lock: the listener then reconnects both).
    private var lock: PostgresConnection?
    private var registered: Int32 = -1
    private var lockRegistered: Int32 = -1
    private var lost = false
    private var backoffMilliseconds: Int64 = 250
    private var retryTimer: UInt64?
    private var closed = false

    init(
        loop: EventLoop, settings: PostgresSettings, node: String, opener: NodeMessageSeal.Opener,
        clock: any RouseClock, metrics: GatewayMetrics, logger: Logger,
        deliver: @escaping @Sendable ([NodeMessage]?) -> Void
    ) {
        self.loop = loop
        self.settings = settings
        self.node = node
        self.opener = opener
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.deliver = deliver
    }

    /// The table whose lock a live node holds for its id: `gateway_node_lock_` and 32 hex digits of the id's
    /// SHA-256 (any id fits PostgreSQL's 63-byte names), made by the gateway's role on first use and granted to no
    /// other role.
    static func lockTable(_ node: String) -> String {
        "gateway_node_lock_"
            + Hex.encode(SHA256.hash(data: Array(node.utf8)).prefix(16))
    }

    /// Connections that listen on `node`'s channel and hold its id's lock; `GatewayError.isNodeInUse` when a live
    /// node holds it.
    ///
    /// The lock is `SHARE UPDATE EXCLUSIVE` on ``lockTable(_:)``, taken `NOWAIT` in a transaction kept open on a
    /// connection of its own (notifications reach a connection only between transactions, so not the `LISTEN`
    /// one). Only a role with `UPDATE`, `DELETE` or `TRUNCATE` on the table (its owner, the gateway's role) may
    /// take it, and the locks another role can get on a table it may not use (`AccessShare`, `RowExclusive`: a
    /// `PREPARE` locks before the privilege check) do not conflict with it. Before, a `pg_advisory_lock` on the id,
    /// which any role may take, kept the node from starting or from listening again. The transaction has no
    /// transaction id and, idle, no snapshot: it holds back no vacuum. PostgreSQL frees the lock when the connection
    /// ends, as when the node stops or dies: a restarted node takes it again at once.
    static func open(settings: PostgresSettings, node: String) throws(GatewayError) -> PostgresNotifications.Connections
    {
        let table = lockTable(node)
        let lock = try PostgresConnection.connect(settings)
        do {
            try GatewayError.wrapping(
                try lock.execute("CREATE TABLE IF NOT EXISTS \(table)(); REVOKE ALL ON \(table) FROM PUBLIC"))
        } catch {
            // Two nodes creating it at once: one fails (a unique violation in the catalog), the table is there.
            guard !error.isUnavailable else { throw error }
        }
        let owned = try GatewayError.wrapping(
            try lock.query(
                """
                SELECT c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
                FROM pg_class c WHERE c.oid = to_regclass($1)
                """, [.init(table)]
            )
        ).bool(0, 0)
        guard owned == true else {
            throw GatewayError.badConfiguration(
                "postgres: table \(table) (the lock of node id \"\(node)\") is missing or owned by another role: "
                    + "drop it, the gateway's role makes it")
        }
        try GatewayError.wrapping(try lock.execute("BEGIN"))
        do {
            try GatewayError.wrapping(try lock.execute("LOCK TABLE \(table) IN SHARE UPDATE EXCLUSIVE MODE NOWAIT"))
        } catch {
            // 55P03 lock_not_available: a live node holds it.
            guard !error.isUnavailable, error.detail.includes("SQLSTATE 55P03") else { throw error }
            throw GatewayError.nodeInUse(node)
        }
        let listen = try PostgresConnection.connect(settings)
        try GatewayError.wrapping(try listen.execute("LISTEN \"\(PostgresNotifications.channel(node))\""))
        return PostgresNotifications.Connections(lock: lock, listen: listen)
    }

    /// Connects and listens (with `first`, the outcome of a connection already tried); on failure, tries again
    /// after the backoff.
    func connect(first: Result<PostgresNotifications.Connections, GatewayError>? = nil) {
        loop.assertInLoop()
        guard !closed, connection == nil else { return }
        do {
            let fresh = try first?.get() ?? Self.open(settings: settings, node: node)
            lock = fresh.lock
            connection = fresh.listen
            try loop.register(fresh.lock.socket, events: EventLoop.readable, handler: self)
            lockRegistered = fresh.lock.socket
            try loop.register(fresh.listen.socket, events: EventLoop.readable, handler: self)
            registered = fresh.listen.socket
            backoffMilliseconds = 250
            if lost {
                lost = false
                logger.info("listening to other nodes again")
                deliver(nil)
            }
            // What arrived with the LISTEN's answer is already buffered: the socket will not signal it again.
            readNotifications()
        } catch {
            drop()
            if (error as? GatewayError)?.isNodeInUse == true {
                // PostgreSQL came back, and another node with this id took the lock meanwhile.
                logger.error(
                    "another live node uses this node id", metadata: ["node": "\(node)", "error": "\(error)"])
            } else if !lost {
                logger.warning("cannot listen to other nodes", metadata: ["error": "\(error)"])
            }
            lost = true
            retryTimer = loop.schedule(after: .milliseconds(backoffMilliseconds)) { [weak self] in
                self?.retryTimer = nil
                self?.connect()
            }
            backoffMilliseconds = min(backoffMilliseconds * 2, 5000)
        }
    }

    func handleEvents(_ events: UInt32) { readNotifications() }

    private func readNotifications() {
        loop.assertInLoop()
        guard let live = connection, let lock else { return }
        do throws(GatewayError) {
            // The lock's connection sends nothing unless it ends (the server stopped, or a role with the right
            // terminated it): then the lock is gone, and both are made again.
            _ = try GatewayError.wrapping(try lock.notifications())
            var messages: [NodeMessage] = []
            for payload in try GatewayError.wrapping(try live.notifications()) {
                // Anyone who may connect to the database may NOTIFY here: only what the cluster key sealed counts.
                let opened = opener.open(payload, now: clock.wallMilliseconds)
                guard case .success(let message) = opened else {
                    if case .failure(let error) = opened {
                        metrics.limitHit(listener: "nodes", limit: "forged-message")
                        refused &+= 1
                        if refused & (refused &- 1) == 0 {
                            logger.warning(
                                "refused a node message", metadata: ["error": "\(error)", "refused": "\(refused)"])
                        }
                    }
                    continue
                }
                let (parsed, errors) = NodeMessage.parse(message.lines)
                messages += parsed
                for error in errors {
                    metrics.limitHit(listener: "nodes", limit: "bad-message")
                    logger.warning(
                        "bad message from another node", metadata: ["error": "\(error)", "sender": "\(message.sender)"])
                }
            }
            if !messages.isEmpty { deliver(messages) }
        } catch {
            logger.warning("lost the connection to other nodes", metadata: ["error": "\(error)"])
            drop()
            lost = true
            connect()
        }
    }

    private func drop() {
        if registered >= 0 {
            // libpq closes the socket of a connection it found broken (PQsocket is then -1): the kernel removed it
            // from epoll already.
            if connection?.socket == registered { loop.unregister(registered) } else { loop.forget(registered) }
        }
        registered = -1
        connection = nil
        if lockRegistered >= 0 {
            if lock?.socket == lockRegistered { loop.unregister(lockRegistered) } else { loop.forget(lockRegistered) }
        }
        lockRegistered = -1
        lock = nil
    }

    /// No more connecting or reading.
    func close() {
        loop.assertInLoop()
        closed = true
        if let retryTimer { loop.cancelTimer(retryTimer) }
        retryTimer = nil
        drop()
    }
}
