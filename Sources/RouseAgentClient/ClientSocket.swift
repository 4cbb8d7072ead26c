import Glibc
import Synchronization

/// The client library's only syscalls: a connected `AF_UNIX` stream socket it owns.
///
/// Errno policy: `EINTR` is retried; anything else on connect, read or write is thrown as
/// ``AgentClientError`` (the agent went away or refused us); `close` errors are ignored (the fd is gone
/// either way).
final class ClientSocket: Sendable {
    let fd: Int32
    private let writing = Mutex(())

    init(adopting fd: Int32) { self.fd = fd }

    /// Adopts the connection the agent handed over as `fd` (3) and makes it close-on-exec: the handler's own
    /// children must not inherit its connection to the agent (and could not be told apart from it).
    static func inherit(_ fd: Int32) -> ClientSocket {
        let flags = fcntl(fd, F_GETFD)
        if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        return ClientSocket(adopting: fd)
    }

    /// Connects to the agent's socket at `path`.
    static func connect(path: String) throws(AgentClientError) -> ClientSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(fd)
            throw AgentClientError(code: "pathTooLong", detail: path)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        while true {
            let result = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
            }
            if result == 0 { return ClientSocket(adopting: fd) }
            let code = errno
            if code == EINTR { continue }
            Glibc.close(fd)
            throw .system("connect \(path)", code)
        }
    }

    /// Writes all of `bytes`, one writer at a time: two threads sending at once must not interleave the chunks
    /// of their frames.
    func write(_ bytes: [UInt8]) throws(AgentClientError) {
        try writing.withLock { _ throws(AgentClientError) in
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw .system("send", errno)
                }
                offset += written
            }
        }
    }

    /// Writes all of `bytes` with `descriptor` attached (`SCM_RIGHTS`), one writer at a time.
    func write(_ bytes: [UInt8], descriptor: Int32) throws(AgentClientError) {
        try writing.withLock { _ throws(AgentClientError) in
            let code = DescriptorPassing.send(fd, bytes, descriptor: descriptor, nonBlocking: false)
            if code != 0 { throw .system("sendmsg", code) }
        }
    }

    /// Reads up to 64 KiB with the descriptors that came with them (close-on-exec, the caller's); empty bytes mean
    /// the agent closed the connection.
    func read() throws(AgentClientError) -> (bytes: [UInt8], descriptors: [Int32]) {
        do {
            let read = try DescriptorPassing.receive(fd)
            return (read.bytes, read.descriptors)
        } catch {
            throw .system("recvmsg", error.errno)
        }
    }

    /// Shuts the connection down (wakes a blocked reader); the fd is closed in `deinit`.
    func shutdownBoth() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    deinit { Glibc.close(fd) }
}

/// A failure of the handler-side client.
public struct AgentClientError: Error, Sendable, CustomStringConvertible {
    /// Short code.
    public let code: String
    /// What happened.
    public let detail: String

    static func system(_ call: String, _ code: Int32) -> AgentClientError {
        AgentClientError(code: "system", detail: "\(call): \(String(cString: strerror(code))) (errno \(code))")
    }

    public var description: String { "\(code): \(detail)" }
}
