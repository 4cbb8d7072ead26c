import Glibc

extension Sys {
    /// A TCP socket bound to 127.0.0.1 on a port the kernel picked; listening when `listen` is true (a listener
    /// that never accepts completes TCP handshakes in the kernel and nothing more). The caller closes it.
    package static func loopbackSocket(listen: Bool) throws(SystemError) -> (fd: Int32, port: UInt16) {
        let fd = try socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue))
        do {
            guard let address = SocketAddress(ip: "127.0.0.1", port: 0) else { preconditionFailure("literal address") }
            try bind(fd, address)
            if listen { try Sys.listen(fd, backlog: 8) }
            return (fd, try localAddress(fd).port)
        } catch {
            close(fd)
            throw error
        }
    }

    /// A loopback port that was free a moment ago (for external servers that need one on their command line).
    package static func freeLoopbackPort() throws(SystemError) -> UInt16 {
        let (fd, port) = try loopbackSocket(listen: false)
        close(fd)
        return port
    }

    /// Whether `port` on 127.0.0.1 was free for both TCP and UDP a moment ago (for a server that takes a second port
    /// next to the one it is given, as baresip's TLS transport takes the SIP port + 1).
    package static func loopbackPortIsFree(_ port: UInt16) -> Bool {
        for type in [SOCK_STREAM, SOCK_DGRAM] {
            guard let fd = try? socket(family: AF_INET, type: Int32(type.rawValue)) else { return false }
            defer { close(fd) }
            guard let address = SocketAddress(ip: "127.0.0.1", port: port), (try? bind(fd, address)) != nil else {
                return false
            }
        }
        return true
    }
}
