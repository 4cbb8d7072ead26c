import Glibc
import RouseTestSupport

/// The far end of a handler's signalling connection in the tests (a SIP proxy's place): a TCP listener on loopback
/// and the one connection the handler makes to it.
final class VoIPPeer: @unchecked Sendable {  // `connection` is written once by `accept()`, by the test's own task.
    let listener: Int32
    let port: UInt16
    private(set) var connection: Int32 = -1

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard listener >= 0, bound == 0, Glibc.listen(listener, 4) == 0 else {
            throw FixtureError("VoIP peer: bind/listen errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.port = UInt16(bigEndian: address.sin_port)
        _ = fcntl(listener, F_SETFL, O_NONBLOCK)
    }

    /// `127.0.0.1:PORT`, for `--voip-connect`.
    var target: String { "127.0.0.1:\(port)" }

    /// Waits for the handler's connection.
    func accept() async throws {
        try await eventually("the handler connected to the VoIP peer") {
            let fd = Glibc.accept(listener, nil, nil)
            guard fd >= 0 else { return false }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, 0)  // blocking reads (with a timeout) for the test
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            connection = fd
            return true
        }
    }

    /// Sends `text` on the connection.
    func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// What the handler wrote back, read until `expected` came (or 10 s passed).
    func read(until expected: String) -> String {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !text.contains(expected) {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            text += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return text
    }

    deinit {
        if connection >= 0 { close(connection) }
        close(listener)
    }
}

/// The far end of a handler's connected UDP socket (SIP over UDP): it learns the handler's address from its first
/// datagram, as a registrar learns a contact from a REGISTER.
final class UDPPeer: @unchecked Sendable {  // `handler` is written once by `receiveHello()`, by the test's own task.
    let fd: Int32
    let port: UInt16
    private var handler = sockaddr_in()

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard fd >= 0, bound == 0 else { throw FixtureError("UDP peer: bind errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = UInt16(bigEndian: address.sin_port)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// `udp:127.0.0.1:PORT`, for `--voip-connect`.
    var target: String { "udp:127.0.0.1:\(port)" }

    /// One datagram and who sent it (remembered as the handler); nil after 10 s.
    func receiveHello() -> String? {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &handler) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, bytes.baseAddress, bytes.count, 0, $0, &length)
                }
            }
        }
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// Sends `text` to the handler.
    func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { bytes in
            withUnsafePointer(to: &handler) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    deinit { close(fd) }
}
