import Logging
import RouseClock
import RouseEventLoop
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
            opener: NodeMessageSeal.Opener(key: clusterKey, node: node),
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
        if case .failure(let error) = first, error.isNodeInUse { throw error }
        return Claim(result: first)
    }

    /// The outcome of ``claim(settings:node:)``, handed to the listener.
    struct Claim {
        fileprivate let result: Result<PostgresConnection, GatewayError>
    }

    /// Hands the first connection to the loop's thread, which alone uses it from then on (hence `@unchecked`).
    private final class Handover: @unchecked Sendable {
        let value: Result<PostgresConnection, GatewayError>?
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
    private var registered: Int32 = -1
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

    /// The advisory lock a live node holds on its `LISTEN` connection for its id (`pg_try_advisory_lock(int, int)`:
    /// this constant, and `hashtext` of the id). PostgreSQL frees it when the connection ends, which happens when
    /// the node stops or dies (its socket closes with the process): a restarted node takes it again at once, a
    /// second live node with the same id is refused.
    static let nodeLockClass: Int32 = 0x524F_5553  // "ROUS"

    /// A connection listening on `node`'s channel and holding its id's lock; `GatewayError.isNodeInUse` when a
    /// live node holds it.
    static func open(settings: PostgresSettings, node: String) throws(GatewayError) -> PostgresConnection {
        let fresh = try PostgresConnection(settings: settings)
        let locked = try fresh.query(
            "SELECT pg_try_advisory_lock($1, hashtext($2))", [.init(Int(nodeLockClass)), .init(node)]
        ).bool(0, 0)
        guard locked == true else { throw GatewayError.nodeInUse(node) }
        try fresh.execute("LISTEN \"\(PostgresNotifications.channel(node))\"")
        return fresh
    }

    /// Connects and listens (with `first`, the outcome of a connection already tried); on failure, tries again
    /// after the backoff.
    func connect(first: Result<PostgresConnection, GatewayError>? = nil) {
        guard !closed, connection == nil else { return }
        do {
            let fresh = try first?.get() ?? Self.open(settings: settings, node: node)
            let socket = fresh.socket
            try loop.register(socket, events: EventLoop.readable, handler: self)
            connection = fresh
            registered = socket
            backoffMilliseconds = 250
            if lost {
                lost = false
                logger.info("listening to other nodes again")
                deliver(nil)
            }
            // What arrived with the LISTEN's answer is already buffered: the socket will not signal it again.
            readNotifications()
        } catch {
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
        guard let live = connection else { return }
        do throws(GatewayError) {
            var messages: [NodeMessage] = []
            for payload in try live.notifications() {
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
    }

    /// No more connecting or reading.
    func close() {
        closed = true
        if let retryTimer { loop.cancelTimer(retryTimer) }
        retryTimer = nil
        drop()
    }
}
