/// The agent answered a request with an `error` frame (or the connection closed first).
public struct AgentRequestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The error code: `badRequest`, `incompatible-option`, `notAuthorized`, `connectionClosed`, ….
    public let code: String
    /// What was wrong.
    public let detail: String

    /// An error.
    public init(code: String, detail: String) {
        self.code = code
        self.detail = detail
    }

    /// The agent's `error` answer.
    public init(_ failure: AgentEvent.Failure) { self.init(code: failure.code, detail: failure.detail) }

    public var description: String { "\(code): \(detail)" }
}
