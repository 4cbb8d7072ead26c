import CRouseSys
import Glibc
import Logging
import RouseEventLoop
import RouseSystem
import Synchronization

/// One listening socket on one loop; accepts connections and hands them, round-robin, to the server's loops, each
/// connection living on its loop as a `ServerConnection`. One accepting socket spreads connections evenly: four
/// connections over two SO_REUSEPORT sockets land by a hash of their ports, all four on one loop one time in eight.
final class Listener: EventLoopFDHandler {
    let fd: Int32
    let loop: EventLoop
    let shared: ServerShared
    /// The loops accepted connections go to, in turn (the listener's own loop among them).
    private let targets: [EventLoop]
    private var nextTarget = 0
    private var closed = false
    private var paused = false
    /// When the last "accept paused" warning was logged (monotonic ns), and pauses since.
    private var lastPauseLog: UInt64 = 0
    private var pausesSinceLog = 0

    init(fd: Int32, loop: EventLoop, targets: [EventLoop], shared: ServerShared) {
        self.fd = fd
        self.loop = loop
        self.targets = targets.isEmpty ? [loop] : targets
        self.shared = shared
    }

    func handleEvents(_ events: UInt32) {
        while !closed {
            let accepted: (fd: Int32, peer: SocketAddress)?
            do {
                accepted = try Sys.accept(fd)
            } catch {
                pause(after: error)
                return
            }
            guard let (client, peer) = accepted else { return }
            let host = Self.admissionKey(peer)
            guard shared.admit(host: host) else {
                Sys.close(client)
                continue
            }
            try? Sys.setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            let target = targets[nextTarget]
            nextTarget = (nextTarget + 1) % targets.count
            if target === loop {
                Self.open(client, peer: peer, host: host, loop: target, shared: shared)
            } else {
                let shared = self.shared
                target.execute { Self.open(client, peer: peer, host: host, loop: target, shared: shared) }
            }
        }
    }

    /// Sets up an accepted connection on `loop` (its own thread): the connection lives there from now on. A
    /// connection handed over while the server began to shut down is closed instead.
    private static func open(_ client: Int32, peer: SocketAddress, host: String, loop: EventLoop, shared: ServerShared)
    {
        guard !shared.stopping.load(ordering: .acquiring) else {
            shared.release(host: host)
            Sys.close(client)
            return
        }
        let local = (try? Sys.localAddress(client))?.description ?? ""
        let info = HTTP2ConnectionInfo(
            id: shared.makeConnectionID(), remoteAddress: peer.description, localAddress: local,
            tlsVersion: nil, peerCertificate: nil)
        let connection: ServerConnection
        do {
            connection = try ServerConnection(fd: client, info: info, peerHost: host, loop: loop, shared: shared)
        } catch {
            shared.logger.warning("connection setup failed", metadata: ["error": "\(error)"])
            shared.release(host: host)
            Sys.close(client)
            return
        }
        shared.connectionOpened(connection)
        do {
            try connection.start()
        } catch {
            shared.logger.warning("connection setup failed", metadata: ["error": "\(error)"])
            connection.close(reason: "setup failed")
        }
    }

    /// Accepting failed (EMFILE, ENFILE, ENOBUFS, ENOMEM: the pending connection stays queued and the socket
    /// readable): stop polling the listener for `acceptPause` instead of spinning, and log at most every 10 s.
    private func pause(after error: any Error) {
        guard !paused else { return }
        paused = true
        shared.counters.acceptPauses.add(1, ordering: .relaxed)
        pausesSinceLog += 1
        let now = loop.now
        if lastPauseLog == 0 || now &- lastPauseLog >= 10_000_000_000 {
            shared.logger.warning(
                "accept failed: listener paused",
                metadata: [
                    "error": "\(error)", "pause": "\(shared.configuration.acceptPause)",
                    "pauses": "\(pausesSinceLog)",
                ])
            lastPauseLog = now
            pausesSinceLog = 0
        }
        loop.modify(fd, events: 0)
        loop.schedule(after: shared.configuration.acceptPause) { [weak self] in
            guard let self, !self.closed else { return }
            self.paused = false
            self.loop.modify(self.fd, events: EPOLLIN.rawValue)
            self.handleEvents(EPOLLIN.rawValue)
        }
    }

    /// What the per-address cap counts by: the IPv4 address, or the /64 of an IPv6 address (one host usually holds a
    /// whole /64, so counting single addresses would cap nothing).
    static func admissionKey(_ peer: SocketAddress) -> String {
        guard peer.family == AF_INET6 else { return peer.host }
        let bytes = withUnsafeBytes(of: peer.storage) { raw in Array(raw[8..<24]) }
        // IPv4-mapped (::ffff:a.b.c.d): the IPv4 address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        return bytes[0..<8].map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }

    func close() {
        guard !closed else { return }
        closed = true
        loop.unregister(fd)
        Sys.close(fd)
    }
}
