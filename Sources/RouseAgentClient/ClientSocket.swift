import RouseSystem
import Synchronization

/// The client library's connection to the agent: a connected `AF_UNIX` stream socket it owns, over RouseSystem's
/// syscall layer. A `SystemError` from connect, read or write is thrown as ``AgentClientError`` (the agent went
/// away or refused us).
final class ClientSocket: Sendable {
    let fd: Int32
    private let writing = Mutex(())

    init(adopting fd: Int32) { self.fd = fd }

    /// Adopts the connection the agent handed over as `fd` (3) and makes it close-on-exec: the handler's own
    /// children must not inherit its connection to the agent (and could not be told apart from it).
    static func inherit(_ fd: Int32) -> ClientSocket {
        Sys.setCloseOnExec(fd)
        return ClientSocket(adopting: fd)
    }

    /// Connects to the agent's socket at `path`.
    static func connect(path: String) throws(AgentClientError) -> ClientSocket {
        do {
            return ClientSocket(adopting: try Sys.connect(unixPath: path))
        } catch  where error.code == .nameTooLong && error.call == "connect" {
            throw AgentClientError(code: "pathTooLong", detail: path)
        } catch {
            throw .system(error)
        }
    }

    /// Writes all of `bytes`, one writer at a time: two threads sending at once must not interleave the chunks
    /// of their frames.
    func write(_ bytes: [UInt8]) throws(AgentClientError) {
        try writing.withLock { _ throws(AgentClientError) in
            do throws(SystemError) { try Sys.sendAll(fd, bytes) } catch { throw .system(error) }
        }
    }

    /// Writes all of `bytes` with `descriptor` attached (`SCM_RIGHTS`), one writer at a time.
    func write(_ bytes: [UInt8], descriptor: Int32) throws(AgentClientError) {
        try writing.withLock { _ throws(AgentClientError) in
            do throws(SystemError) { try Sys.sendAll(fd, bytes, descriptor: descriptor) } catch { throw .system(error) }
        }
    }

    /// Reads up to 64 KiB with the descriptors that came with them (close-on-exec, the caller's); empty bytes mean
    /// the agent closed the connection.
    func read() throws(AgentClientError) -> (bytes: [UInt8], descriptors: [Int32]) {
        do {
            let read = try Sys.receiveWithDescriptors(fd)
            return (read.bytes, read.descriptors)
        } catch {
            throw .system(error)
        }
    }

    /// Shuts the connection down (wakes a blocked reader); the fd is closed in `deinit`.
    func shutdownBoth() { Sys.shutdownBoth(fd) }

    deinit { Sys.close(fd) }
}

/// A failure of the handler-side client.
public struct AgentClientError: Error, Sendable, CustomStringConvertible {
    /// Short code.
    public let code: String
    /// What happened.
    public let detail: String

    static func system(_ error: SystemError) -> AgentClientError {
        AgentClientError(code: "system", detail: "\(error)")
    }

    public var description: String { "\(code): \(detail)" }
}
