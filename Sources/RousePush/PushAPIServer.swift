import Glibc
import Logging
import RouseClock
import RouseEventLoop
import RousePushCore
import RouseSystem
import Synchronization

/// Who may use a listener: on the Unix socket the peer's uid/gid (SO_PEERCRED, SO_PEERGROUPS), on TCP a bearer token.
enum PushAPIAccess: Sendable {
    case peers(uids: Set<UInt32>, gids: Set<UInt32>)
    case bearer(String)
}

/// The API's HTTP/1.1 listeners (a Unix socket and optionally TCP) on one epoll loop. Every connection is bounded:
/// the connection count, the head and body sizes (the parser), one request at a time (pipelined requests wait in
/// the bounded read buffer), a deadline to finish a started request, an idle limit between requests.
package final class PushAPIServer: Sendable {
    let loop: EventLoop
    let state: PushAPIServerState
    private let listeners: Mutex<[Int32]>
    private let unixFile: String
    /// The TCP listener's address (with the real port when 0 was asked), if any.
    package let tcpAddress: SocketAddress?

    /// Whether the server made its loop (and stops it).
    private let ownsLoop: Bool

    /// Binds the listeners of `configuration`, starts the loop and serves `handler`. On `loop` when given: a loop not
    /// started yet that the service's pools share (``PushService/sharedLoop``), stopped by the service's shutdown
    /// after this server's; else on a loop of its own.
    package init(
        configuration: PushServiceConfiguration, bearerToken: String?, handler: PushAPIHandler,
        metrics: PushServiceMetrics, logger: Logger, loop: EventLoop? = nil
    ) throws {
        ownsLoop = loop == nil
        self.loop = try loop ?? EventLoop(name: "rouse-pushd-api")
        let limits = configuration.limits
        var parserLimits = HTTP1RequestParser.Limits()
        parserLimits.maxBodyBytes = limits?.maxBodyBytes ?? (1 << 20)
        state = PushAPIServerState(
            handler: handler, metrics: metrics, logger: logger, parserLimits: parserLimits,
            maxConnections: limits?.maxConnections ?? 256,
            requestTimeout: .milliseconds(Int64((limits?.requestTimeoutSeconds ?? 10) * 1000)),
            idleTimeout: .milliseconds(Int64((limits?.idleTimeoutSeconds ?? 300) * 1000)))
        unixFile = configuration.unix.path
        var fds: [(Int32, PushAPIAccess)] = []
        var uids = Set(configuration.unix.allowUIDs ?? [])
        uids.insert(0)
        uids.insert(getuid())
        let unixFD = try Self.listenUnix(path: configuration.unix.path, mode: mode_t(configuration.unixMode))
        fds.append((unixFD, .peers(uids: uids, gids: Set(configuration.unix.allowGIDs ?? []))))
        var tcpAddress: SocketAddress?
        if let tcp = configuration.tcp, let bearerToken {
            do {
                var address = try SocketAddress(parsing: tcp.address)
                let fd = try Sys.socket(family: address.family, type: Int32(SOCK_STREAM.rawValue))
                try Sys.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
                try Sys.bind(fd, address)
                try Sys.listen(fd, backlog: 512)
                address = try Sys.localAddress(fd)
                tcpAddress = address
                fds.append((fd, .bearer(bearerToken)))
            } catch {
                Sys.close(unixFD)
                throw error
            }
        }
        self.tcpAddress = tcpAddress
        listeners = Mutex(fds.map(\.0))
        // Registered before the loop's thread starts: nothing else touches the loop yet.
        for (fd, access) in fds {
            try self.loop.register(
                fd, events: EventLoop.readable,
                handler: APIListener(fd: fd, access: access, loop: self.loop, state: state))
        }
        self.loop.start()
    }

    private static func listenUnix(path: String, mode: mode_t) throws -> Int32 {
        guard let address = SocketAddress(unixPath: path, relative: true) else {
            throw SystemError(call: "bind", code: .nameTooLong, path: path)
        }
        if let status = try? Sys.status(path, follow: false), status.isSocket { _ = try? Sys.remove(path) }
        let fd = try Sys.socket(family: AF_UNIX, type: Int32(SOCK_STREAM.rawValue))
        do {
            // The socket file is made with the socket's own mode (less the umask): set it before bind so the file
            // never exists with a wider one, then the configured mode.
            try Sys.changeMode(fd, 0o600)
            try Sys.bind(fd, address)
            try Sys.changeMode(path: path, mode)
            try Sys.listen(fd, backlog: 512)
            return fd
        } catch {
            Sys.close(fd)
            throw error
        }
    }

    /// Open API connections now.
    package var connectionCount: Int { state.open.load(ordering: .relaxed) }

    /// How often the API loop woke up (events, timers, hand-overs): what an idle service keeps at zero.
    package var loopWakeUps: UInt64 { loop.wakeUps.load(ordering: .relaxed) }

    /// Stops accepting, closes idle connections, waits (at most `gracePeriod`) for connections with a push in flight
    /// to be answered, then stops the loop and removes the socket file.
    package func shutdown(gracePeriod: Duration = .seconds(10)) async {
        let fds = listeners.withLock { l in
            defer { l.removeAll() }
            return l
        }
        let loop = self.loop
        let state = self.state
        loop.execute {
            for fd in fds {
                loop.unregister(fd)
                Sys.close(fd)
            }
            state.closeIdle()
        }
        let clock = SystemClock()
        let end = clock.now.advanced(by: gracePeriod)
        while state.open.load(ordering: .relaxed) > 0 && clock.now < end {
            try? await Task.sleep(for: .milliseconds(5))
            loop.execute { state.closeIdle() }
        }
        loop.execute { state.closeAll() }
        if ownsLoop { loop.stopAndWait() }
        _ = try? Sys.remove(unixFile)
    }
}

/// What the loop's listeners and connections share. Loop-thread only except the atomic count.
final class PushAPIServerState: @unchecked Sendable {  // `connections` is touched on the API loop's thread only.
    let handler: PushAPIHandler
    let metrics: PushServiceMetrics
    let logger: Logger
    let parserLimits: HTTP1RequestParser.Limits
    let maxConnections: Int
    let requestTimeout: Duration
    let idleTimeout: Duration
    let open = Atomic<Int>(0)
    var connections: [Int32: APIConnection] = [:]
    private var nextID: UInt64 = 0

    init(
        handler: PushAPIHandler, metrics: PushServiceMetrics, logger: Logger, parserLimits: HTTP1RequestParser.Limits,
        maxConnections: Int, requestTimeout: Duration, idleTimeout: Duration
    ) {
        self.handler = handler
        self.metrics = metrics
        self.logger = logger
        self.parserLimits = parserLimits
        self.maxConnections = maxConnections
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
    }

    func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    func opened(_ c: APIConnection) {
        connections[c.fd] = c
        metrics.setConnections(open.add(1, ordering: .relaxed).newValue)
    }

    func closed(_ c: APIConnection) {
        guard connections.removeValue(forKey: c.fd) != nil else { return }
        metrics.setConnections(open.subtract(1, ordering: .relaxed).newValue)
    }

    func closeIdle() {
        for c in connections.values where !c.busy { c.close() }
    }

    func closeAll() {
        for c in connections.values { c.close() }
    }
}

/// A listening socket on the API loop.
final class APIListener: EventLoopFDHandler {
    let fd: Int32
    let access: PushAPIAccess
    let loop: EventLoop
    let state: PushAPIServerState

    init(fd: Int32, access: PushAPIAccess, loop: EventLoop, state: PushAPIServerState) {
        self.fd = fd
        self.access = access
        self.loop = loop
        self.state = state
    }

    func handleEvents(_ events: UInt32) {
        while true {
            let accepted: (fd: Int32, peer: SocketAddress)?
            do {
                accepted = try Sys.accept(fd)
            } catch {
                state.logger.warning("accept failed", metadata: ["error": "\(error)"])
                return
            }
            guard let (client, _) = accepted else { return }
            if state.connections.count >= state.maxConnections {
                state.metrics.limitHit(.connections)
                APIConnection.refuse(client, status: 503, message: "too many API connections")
                continue
            }
            var denied: String?
            if case .peers(let uids, let gids) = access {
                if let peer = Sys.peerCredentials(client) {
                    let groups = Set(Sys.peerGroups(client)).union([peer.gid])
                    if !uids.contains(peer.uid) && gids.isDisjoint(with: groups) {
                        denied = "uid \(peer.uid) gid \(peer.gid) is not allowed"
                    }
                } else {
                    denied = "peer credentials unreadable"
                }
            }
            if let denied {
                state.metrics.limitHit(.peer)
                state.logger.warning("API peer refused", metadata: ["reason": "\(denied)"])
            }
            let bearer: String? = if case .bearer(let token) = access { token } else { nil }
            // A refused peer's request is read (bounded, as any) and answered 403, then the connection closes: an
            // answer written before the client sent anything would be lost in the reset its send causes.
            let connection = APIConnection(
                fd: client, id: state.makeID(), bearer: bearer, denied: denied.map { "peer refused: \($0)" },
                loop: loop, state: state)
            do {
                try loop.register(client, events: EventLoop.readable, handler: connection)
            } catch {
                Sys.close(client)
                continue
            }
            state.opened(connection)
            connection.armIdle()
        }
    }
}
