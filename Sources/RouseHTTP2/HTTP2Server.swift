import CRouseSys
import Glibc
import Logging
import RouseClock
import RouseEventLoop
import RouseSystem
import Synchronization

/// An HTTP/2 server on libnghttp2, OpenSSL and epoll: many connections and streams on a few event-loop
/// threads (`workers`: one socket accepts on the first loop and hands connections to the loops in turn), SETTINGS
/// as APNs sends them, idle timeouts, graceful shutdown, and the rapid-reset guard.
public final class HTTP2Server: Sendable {
    private let shared: ServerShared
    private let loops: [EventLoop]
    private let listeners: Mutex<[Listener]>
    /// The address the server listens on (with the real port when 0 was asked).
    public let localAddress: SocketAddress
    /// The socket file of a Unix-domain listener and its identity, removed at shutdown if it is still ours.
    private let unixFile: Sys.UnixSocketFile?

    /// Binds and starts serving. Every connection gets a handler from `factory`; its timers (handshake,
    /// authentication, request and idle limits, the accept pause) run on `clock`.
    public init(
        configuration: HTTP2ServerConfiguration, logger: Logger = Logger(label: "rouse.http2"),
        clock: any RouseClock = SystemClock(), factory: @escaping HTTP2HandlerFactory
    ) throws {
        let tls = try configuration.tls.map { c throws(TLSError) in
            var c = c
            c.offersHTTP11 = configuration.servesHTTP11
            return try TLSContext(configuration: c, server: true)
        }
        var address = try SocketAddress(parsing: configuration.listenAddress)
        let unixPath = address.unixPath
        // One socket file takes one listener: a Unix-domain server runs one loop.
        var loops: [EventLoop] = []
        for i in 0..<(unixPath == nil ? max(configuration.workers, 1) : 1) {
            loops.append(try EventLoop(name: "rouse-h2-\(i)", clock: clock))
        }
        let shared = ServerShared(
            configuration: configuration, tls: tls, factory: factory, logger: logger, loops: loops)
        // One accepting socket on the first loop, which deals connections to every loop in turn (`Listener`).
        var unixFile: Sys.UnixSocketFile?
        let fd = try Sys.socket(family: address.family, type: Int32(SOCK_STREAM.rawValue))
        do {
            if let unixPath {
                // The one policy of socket files: a stale one replaced, the mode set before bind.
                unixFile = try Sys.bindUnix(fd, path: unixPath, mode: configuration.unixSocketMode)
            } else {
                try Sys.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
                try Sys.bind(fd, address)
            }
            try Sys.listen(fd, backlog: configuration.backlog)
            if address.port == 0 && unixPath == nil { address = try Sys.localAddress(fd) }
        } catch {
            Sys.close(fd)
            if let unixFile { Sys.removeSocketFile(unixFile) }
            throw error
        }
        let listener = Listener(fd: fd, loop: loops[0], targets: loops, shared: shared)
        self.shared = shared
        self.loops = loops
        self.localAddress = address
        self.unixFile = unixFile
        try loops[0].register(listener.fd, events: EPOLLIN.rawValue, handler: listener)
        for loop in loops { loop.start() }
        self.listeners = Mutex([listener])
    }

    /// How often the budgets were hit since the server started (connections refused, streams reset, …).
    public var limitCounts: HTTP2ServerLimitCounts { shared.counters.snapshot }

    /// nghttp2's memory for all server sessions of this process: sessions open and the bytes nghttp2 holds for them
    /// (counted by its allocator, `NGHTTP2Allocator`), e.g. to state the HTTP/2 part of an idle connection's cost.
    public static var sessionMemory: (sessions: Int, bytes: Int) {
        (NGHTTP2Allocator.liveSessions, NGHTTP2Allocator.liveBytes)
    }

    /// How often the server's loop threads woke up since it started.
    /// Timer entries the server's loops hold, live and cancelled (as of each loop's last pass): connection churn
    /// must not pile them up.
    public var timerEntries: Int { loops.reduce(0) { $0 + $1.timerEntryGauge.load(ordering: .relaxed) } }

    package var loopWakeUps: UInt64 { loops.reduce(0) { $0 + $1.wakeUps.load(ordering: .relaxed) } }

    /// Connections currently open.
    public var connectionCount: Int { shared.openConnections.load(ordering: .relaxed) }

    /// Graceful shutdown: stop accepting, send GOAWAY to every connection, let open streams finish, then close
    /// what is left once `gracePeriod` has passed, and stop the loops.
    public func shutdown(gracePeriod: Duration = .seconds(5)) async {
        let listeners = self.listeners.withLock { l in
            let taken = l
            l.removeAll()
            return taken
        }
        guard !listeners.isEmpty else { return }
        shared.stopping.store(true, ordering: .releasing)
        for listener in listeners {
            let l = UncheckedBox(listener)
            listener.loop.execute { l.value.close() }
        }
        for loop in loops {
            let shared = self.shared
            loop.execute {
                for c in shared.connections(on: loop) { c.beginGracefulShutdown() }
            }
        }
        // Real time, whatever the loops' clock: a test's manual clock must not hold a shutdown for ever.
        let realTime = SystemClock()
        let deadline = realTime.deadline(after: gracePeriod)
        while connectionCount > 0 && realTime.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for loop in loops {
            let shared = self.shared
            loop.execute {
                for c in shared.connections(on: loop) { c.close(reason: "shutdown grace period over") }
            }
        }
        for loop in loops { loop.stopAndWait() }
        if let unixFile { Sys.removeSocketFile(unixFile) }
    }
}
