import Glibc

/// A failed system call: which call, and the `errno` it left.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The system call that failed (`"epoll_wait"`, `"accept4"`, …).
    public let call: String
    /// The `errno` value read right after the call.
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String {
        "\(call): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
