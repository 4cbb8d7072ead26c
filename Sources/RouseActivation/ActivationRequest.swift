/// A handler's request to activate a session.
public struct ActivationRequest: Sendable, Hashable, Codable {
    /// The session (its handler is the requester).
    public var session: SessionID
    /// Category, mode and options.
    public var configuration: SessionConfiguration
    /// The priority class (role). `call` is refused here: calls go through `callStarted`.
    public var priority: ActivationPriority
    /// Whether the requester accepts a delayed grant when only a call blocks it (Android's
    /// `setAcceptsDelayedFocusGain(true)`).
    public var acceptsDelay: Bool

    /// Creates a request.
    public init(
        session: SessionID, configuration: SessionConfiguration, priority: ActivationPriority = .media,
        acceptsDelay: Bool = false
    ) {
        self.session = session
        self.configuration = configuration
        self.priority = priority
        self.acceptsDelay = acceptsDelay
    }

    /// The requester.
    public var handler: HandlerID { session.handler }
}
