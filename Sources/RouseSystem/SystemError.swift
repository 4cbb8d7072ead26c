/// A failed system call: which call, on which path when there is one, and the `errno` it left (see the policy in
/// `Syscalls.swift`).
package struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The system call that failed (`"epoll_wait"`, `"accept4"`, `"open"`, …).
    package let call: String
    /// The `errno` read right after the call.
    package let code: Errno
    /// The file or socket path the call was given, when it took one.
    package let path: String?

    /// The `errno` value, as a number.
    package var errno: Int32 { code.rawValue }

    package init(call: String, errno: Int32, path: String? = nil) {
        self.init(call: call, code: Errno(rawValue: errno), path: path)
    }

    package init(call: String, code: Errno, path: String? = nil) {
        self.call = call
        self.code = code
        self.path = path
    }

    /// A shortage that passes (descriptors, memory, processes): worth trying again shortly.
    package var isShortage: Bool { code.isShortage }

    /// `call path: strerror (errno N)`.
    package var description: String {
        "\(call)\(path.map { " \($0)" } ?? ""): \(code) (errno \(errno))"
    }
}
