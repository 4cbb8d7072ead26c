import RouseSystem

/// A failure of the agent's shells (syscalls, configuration, gateway requests).
package struct AgentError: Error, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case system, configuration, gateway, identity
    }

    private let code: Code
    /// The errno of a failed syscall (``system(_:_:)``), nil otherwise.
    package let errno: Int32?
    /// What failed, with its context (the syscall and errno, the file and line, the HTTP status).
    package let detail: String

    /// A call of RouseSystem's syscall layer failed (the detail is its description: call, path, errno). A socket
    /// path too long for `sun_path` is a configuration error.
    static func system(_ error: SystemError) -> AgentError {
        if error.code == .nameTooLong, error.call == "bind", let path = error.path {
            return .configuration("socket path too long: \(path)")
        }
        return AgentError(code: .system, detail: error.description, errno: error.errno)
    }

    /// Runs a call of RouseSystem's syscall layer, its `SystemError` thrown as an ``AgentError``.
    @discardableResult
    static func wrapping<T>(_ body: @autoclosure () throws(SystemError) -> T) throws(AgentError) -> T {
        do { return try body() } catch { throw .system(error) }
    }

    /// A configuration file is wrong.
    package static func configuration(_ detail: String) -> AgentError {
        AgentError(code: .configuration, detail: detail)
    }
    /// The gateway refused or failed a request.
    package static func gateway(_ detail: String) -> AgentError { AgentError(code: .gateway, detail: detail) }
    /// A peer is not who it claims to be.
    package static func identity(_ detail: String) -> AgentError { AgentError(code: .identity, detail: detail) }

    /// Whether this is a configuration error.
    package var isConfiguration: Bool { code == .configuration }

    private init(code: Code, detail: String, errno: Int32? = nil) {
        self.code = code
        self.detail = detail
        self.errno = errno
    }

    /// A shortage that passes (descriptors, memory, processes): worth trying again shortly.
    package var isShortage: Bool { errno.map { Errno(rawValue: $0).isShortage } ?? false }

    package var description: String { "\(code.rawValue): \(detail)" }
}
