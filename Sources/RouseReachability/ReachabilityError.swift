import RouseNetlink

/// An error of the reachability monitor: a bad target, a failure to start, a netlink failure.
public struct ReachabilityError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// Text that is not an address, an address pair or a host name.
        public static let badTarget = Code("bad-target")
        /// The monitor could not open its sockets, enter its namespace or dump the initial state.
        public static let startFailed = Code("start-failed")
        /// The monitor was used after `stop()`, or started twice.
        public static let notRunning = Code("not-running")
        /// A netlink call failed.
        public static let netlink = Code("netlink")
        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// Details: the target text, the syscall, the namespace.
    public let context: String
    /// The underlying netlink error, if any.
    public let underlying: NetlinkError?

    init(_ code: Code, _ context: String, underlying: NetlinkError? = nil) {
        self.code = code
        self.context = context
        self.underlying = underlying
    }

    public var description: String {
        if let underlying { return "reachability \(code): \(context): \(underlying)" }
        return "reachability \(code): \(context)"
    }
}
