/// The opaque identity of a handler program, as the agent authenticated it (pidfd, `SO_PEERCRED`).
public struct HandlerID: RawRepresentable, Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public let rawValue: String

    /// Wraps an identity string chosen by the agent (e.g. the handler's registered name).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Wraps an identity string.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Decodes from a JSON string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes as a JSON string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A session: a handler plus a name the handler chose. The handler is part of the identity, so a peer can
/// only ever name its own sessions. The name `call` is reserved for the call path.
public struct SessionID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The holder.
    public let handler: HandlerID
    /// The handler's name for the session.
    public let name: String

    /// Creates a session identity.
    public init(handler: HandlerID, name: String) {
        self.handler = handler
        self.name = name
    }

    /// The reserved name of a handler's call session.
    public static let callName = "call"

    /// The session the call path activates for `handler`.
    public static func call(of handler: HandlerID) -> SessionID { SessionID(handler: handler, name: callName) }

    /// Whether this is a call session.
    public var isCall: Bool { name == Self.callName }

    public var description: String { "\(handler)/\(name)" }
}

/// What the agent knows of a handler's run state.
public enum HandlerState: String, Sendable, Hashable, Codable {
    /// The user's program says it is in front.
    case foreground
    /// Running, not in front (also the state of a handler the arbiter has not been told about).
    case background
    /// Frozen by the agent.
    case suspended
}

/// A run state the agent reports with `handlerStateChanged` (suspension goes through `handlerSuspended`).
public enum HandlerActivity: String, Sendable, Hashable, Codable {
    /// See `HandlerState.foreground`.
    case foreground
    /// See `HandlerState.background`.
    case background

    var state: HandlerState { self == .foreground ? .foreground : .background }
}

/// Why a holder is gone; every reason is treated as deactivation with `notifyOthers`.
public enum HolderGoneReason: String, Sendable, Hashable, Codable {
    /// The handler's IPC connection closed (HUP).
    case connectionClosed
    /// The handler's process exited (pidfd readable).
    case processExited
    /// The agent terminated the handler (deadline missed, budget exhausted, user quit).
    case terminatedByAgent
}
