/// What the agent must do after an arbiter step, in order: send a message to a session's holder, or run
/// the hook command. The arbiter never addresses a holder that is gone.
public enum ActivationEffect: Sendable, Hashable {
    /// Send `message` to the holder of `session` (`session.handler`).
    case notify(SessionID, ActivationMessage)
    /// Run the hook command for a grant or a revoke (see `HookEvent`).
    case hook(HookEvent)
}

/// A message to a session's holder.
///
/// Pairing (guaranteed for every session whose holder is alive): every `interruptionBegan` is followed by
/// exactly one `interruptionEnded`, every `duckBegan` by exactly one `duckEnded`, whatever ends them
/// (the interrupter leaving, the holder deactivating, the call ending, suspension ending). A duck never
/// outlives the active state: a ducked session that is interrupted or ends gets `duckEnded` first.
public enum ActivationMessage: Sendable, Hashable {
    /// The session is active: the holder may play/record.
    case granted
    /// The request was refused; the session is not active.
    case denied(DenialReason)
    /// The request waits for a call to end; `granted` (or `callActivated`) follows when nothing blocks it.
    case delayed
    /// The session was stopped by the arbiter; the holder must stop its audio.
    case interruptionBegan(InterruptionReason)
    /// The interruption is over. `shouldResume: true`: the session is active again and the holder may
    /// resume. `false`: the session is inactive; the holder must activate again to play.
    case interruptionEnded(shouldResume: Bool)
    /// A higher-priority session ducks this one: lower the volume.
    case duckBegan
    /// The duck is over: restore the volume.
    case duckEnded
    /// The audio route changed (forwarded from an external source).
    case routeChanged(RouteChangeReason)
    /// The call path activated the handler's call session (CallKit's `provider(_:didActivate:)`).
    case callActivated
    /// The call session is no longer active (CallKit's `provider(_:didDeactivate:)`).
    case callDeactivated
}

/// Why a request was refused.
public enum DenialReason: String, Sendable, Hashable, Codable {
    /// A non-mixable session of higher priority is active (`AVAudioSession.ErrorCode.insufficientPriority`).
    case insufficientPriority
    /// A non-mixable request from a handler in the background with no call (`cannotInterruptOthers`).
    case cannotInterruptOthers
    /// Call priority (or the reserved session name `call`) asked for directly: calls go through the call path.
    case callPathRequired
    /// The handler is suspended (also sent to a delayed request when its handler is suspended).
    case appSuspended
    /// The session is already active with another configuration, or interrupted: deactivate it first.
    case alreadyActive
}

/// Why a session was interrupted.
public enum InterruptionReason: String, Sendable, Hashable, Codable {
    /// Another session activated (iOS's `.default`).
    case preempted
    /// The holder was suspended (iOS's `appWasSuspended`).
    case appSuspended
}

/// Why the audio route changed, as reported by the external source. Open: an unknown value survives.
public struct RouteChangeReason: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    /// Wraps a reason string.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The reason is not known.
    public static let unknown = RouteChangeReason(rawValue: "unknown")
    /// A device became available (headset plugged in).
    public static let newDeviceAvailable = RouteChangeReason(rawValue: "newDeviceAvailable")
    /// The previous device went away (headset unplugged).
    public static let oldDeviceUnavailable = RouteChangeReason(rawValue: "oldDeviceUnavailable")
    /// The category changed.
    public static let categoryChange = RouteChangeReason(rawValue: "categoryChange")
    /// The route was overridden.
    public static let override = RouteChangeReason(rawValue: "override")
    /// The device woke from sleep.
    public static let wakeFromSleep = RouteChangeReason(rawValue: "wakeFromSleep")
    /// No route suits the category.
    public static let noSuitableRouteForCategory = RouteChangeReason(rawValue: "noSuitableRouteForCategory")
    /// The route's configuration changed.
    public static let routeConfigurationChange = RouteChangeReason(rawValue: "routeConfigurationChange")

    public var description: String { rawValue }

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
