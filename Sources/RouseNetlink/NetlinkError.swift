/// An error from the rtnetlink binding: a malformed or truncated message, an error the kernel
/// answered with, or a failed system call. Carries a code, the context (which structure or syscall)
/// and, when the kernel or libc gave one, the errno value.
public struct NetlinkError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, as an open set of codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// Fewer bytes than a fixed-size header or structure needs.
        public static let truncated = Code("truncated")
        /// A length field that is smaller than its own header or runs past the buffer.
        public static let badLength = Code("bad-length")
        /// An attribute whose payload does not have the size its type requires.
        public static let badAttribute = Code("bad-attribute")
        /// The kernel answered a request with `NLMSG_ERROR` and a non-zero error.
        public static let kernel = Code("kernel")
        /// A system call failed.
        public static let syscall = Code("syscall")
        /// A reply did not come before its deadline.
        public static let timeout = Code("timeout")
        /// Events were lost (`ENOBUFS`): the caller must re-dump the state it mirrors.
        public static let overrun = Code("overrun")
        /// Text that is not a valid address.
        public static let badAddress = Code("bad-address")
        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// Where: the structure being decoded, or the syscall and its argument.
    public let context: String
    /// The errno value, for `.kernel` and `.syscall`.
    public let errno: Int32?

    /// Creates an error; `package` so only the binding makes them.
    package init(_ code: Code, _ context: String, errno: Int32? = nil) {
        self.code = code
        self.context = context
        self.errno = errno
    }

    public var description: String {
        if let errno { return "netlink \(code): \(context) (errno \(errno))" }
        return "netlink \(code): \(context)"
    }
}
