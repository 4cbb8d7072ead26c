import CRouseShim
import Glibc
import Logging
import RouseSystem
import Synchronization

/// An HTTP/2 server on libnghttp2, OpenSSL and epoll: many connections and streams on a few event-loop
/// threads, SETTINGS as APNs sends them, idle timeouts, graceful shutdown, and the rapid-reset guard.
public final class HTTP2Server: Sendable {
    private let shared: ServerShared
    private let loops: [EventLoop]
    private let listeners: Mutex<[Listener]>
    /// The address the server listens on (with the real port when 0 was asked).
    public let localAddress: SocketAddress
    /// The socket file of a Unix-domain listener, removed at shutdown.
    private let unixPath: String?

    /// Binds and starts serving. Every connection gets a handler from `factory`.
    public init(
        configuration: HTTP2ServerConfiguration, logger: Logger = Logger(label: "rouse.http2"),
        factory: @escaping HTTP2HandlerFactory
    ) throws {
        let tls = try configuration.tls.map { c throws(TLSError) in try TLSContext(configuration: c, server: true) }
        var address = try SocketAddress(parsing: configuration.listenAddress)
        let unixPath = address.unixPath
        // One socket file takes one listener: a Unix-domain server runs one loop.
        var loops: [EventLoop] = []
        for i in 0..<(unixPath == nil ? max(configuration.workers, 1) : 1) {
            loops.append(try EventLoop(name: "rouse-h2-\(i)"))
        }
        let shared = ServerShared(
            configuration: configuration, tls: tls, factory: factory, logger: logger, loops: loops)
        var listeners: [Listener] = []
        if let unixPath {
            // A stale socket from a process that died is replaced; any other file at the path is an error from bind.
            var status = stat()
            if lstat(unixPath, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK { unlink(unixPath) }
        }
        for loop in loops {
            let fd = try Sys.socket(family: address.family, type: Int32(SOCK_STREAM.rawValue))
            do {
                if let unixPath {
                    // The mode is set before anyone can connect: bind under a umask that grants nothing, then chmod.
                    let old = umask(0o777)
                    defer { umask(old) }
                    try Sys.bind(fd, address)
                    guard chmod(unixPath, configuration.unixSocketMode) == 0 else {
                        throw SystemError(call: "chmod \(unixPath)", errno: errno)
                    }
                } else {
                    try Sys.setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
                    try Sys.setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1)
                    try Sys.bind(fd, address)
                }
                try Sys.listen(fd, backlog: configuration.backlog)
                if address.port == 0 && unixPath == nil { address = try Sys.localAddress(fd) }
            } catch {
                Sys.close(fd)
                for l in listeners { Sys.close(l.fd) }
                throw error
            }
            listeners.append(Listener(fd: fd, loop: loop, shared: shared))
        }
        self.shared = shared
        self.loops = loops
        self.localAddress = address
        self.unixPath = unixPath
        for (loop, listener) in zip(loops, listeners) {
            try loop.register(listener.fd, events: EPOLLIN.rawValue, handler: listener)
            loop.start()
        }
        self.listeners = Mutex(listeners)
    }

    /// How often the budgets were hit since the server started (connections refused, streams reset, …).
    public var limitCounts: HTTP2ServerLimitCounts { shared.counters.snapshot }

    /// How often the server's loop threads woke up since it started.
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
        for listener in listeners {
            let l = UncheckedBox(listener)
            let shared = self.shared
            listener.loop.execute {
                l.value.close()
                for c in shared.connections(on: l.value.loop) { c.beginGracefulShutdown() }
            }
        }
        let deadline = ContinuousClock.now + gracePeriod
        while connectionCount > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for loop in loops {
            let shared = self.shared
            loop.execute {
                for c in shared.connections(on: loop) { c.close(reason: "shutdown grace period over") }
            }
        }
        for loop in loops { loop.stopAndWait() }
        if let unixPath { unlink(unixPath) }
    }
}
