import Glibc
import RouseSystem

/// One listening socket on one loop; accepts connections and hands them to `ServerConnection`.
final class Listener: EventLoopFDHandler {
    let fd: Int32
    let loop: EventLoop
    let shared: ServerShared
    private var closed = false

    init(fd: Int32, loop: EventLoop, shared: ServerShared) {
        self.fd = fd
        self.loop = loop
        self.shared = shared
    }

    func handleEvents(_ events: UInt32) {
        while !closed {
            let accepted: (fd: Int32, peer: SocketAddress)?
            do {
                accepted = try Sys.accept(fd)
            } catch {
                // EMFILE/ENFILE/ENOMEM: log and retry on the next readiness event.
                shared.logger.warning("accept failed", metadata: ["error": "\(error)"])
                return
            }
            guard let (client, peer) = accepted else { return }
            try? Sys.setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            let local = (try? Sys.localAddress(client))?.description ?? ""
            let info = HTTP2ConnectionInfo(
                id: shared.makeConnectionID(), remoteAddress: peer.description, localAddress: local,
                tlsVersion: nil, peerCertificate: nil)
            do {
                let connection = try ServerConnection(fd: client, info: info, loop: loop, shared: shared)
                shared.connectionOpened(connection)
                try connection.start()
            } catch {
                shared.logger.warning("connection setup failed", metadata: ["error": "\(error)"])
                Sys.close(client)
            }
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        loop.unregister(fd)
        Sys.close(fd)
    }
}
