/// The IPC shape of a message: `{"event":"interruptionBegan","reason":"preempted"}`,
/// `{"event":"interruptionEnded","shouldResume":true}`, `{"event":"denied","reason":"insufficientPriority"}`,
/// `{"event":"routeChanged","reason":"oldDeviceUnavailable"}`, else just `{"event":"granted"}`.
extension ActivationMessage: Codable {
    private enum CodingKeys: String, CodingKey { case event, reason, shouldResume }

    /// The `event` name on the wire.
    public var event: String {
        switch self {
        case .granted: "granted"
        case .denied: "denied"
        case .delayed: "delayed"
        case .interruptionBegan: "interruptionBegan"
        case .interruptionEnded: "interruptionEnded"
        case .duckBegan: "duckBegan"
        case .duckEnded: "duckEnded"
        case .routeChanged: "routeChanged"
        case .callActivated: "callActivated"
        case .callDeactivated: "callDeactivated"
        }
    }

    /// Encodes the wire shape.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event, forKey: .event)
        switch self {
        case .denied(let reason): try container.encode(reason, forKey: .reason)
        case .interruptionBegan(let reason): try container.encode(reason, forKey: .reason)
        case .interruptionEnded(let shouldResume): try container.encode(shouldResume, forKey: .shouldResume)
        case .routeChanged(let reason): try container.encode(reason, forKey: .reason)
        case .granted, .delayed, .duckBegan, .duckEnded, .callActivated, .callDeactivated: break
        }
    }

    /// Decodes the wire shape; an unknown event throws.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let event = try container.decode(String.self, forKey: .event)
        switch event {
        case "granted": self = .granted
        case "denied": self = .denied(try container.decode(DenialReason.self, forKey: .reason))
        case "delayed": self = .delayed
        case "interruptionBegan":
            self = .interruptionBegan(try container.decode(InterruptionReason.self, forKey: .reason))
        case "interruptionEnded":
            self = .interruptionEnded(shouldResume: try container.decode(Bool.self, forKey: .shouldResume))
        case "duckBegan": self = .duckBegan
        case "duckEnded": self = .duckEnded
        case "routeChanged": self = .routeChanged(try container.decode(RouteChangeReason.self, forKey: .reason))
        case "callActivated": self = .callActivated
        case "callDeactivated": self = .callDeactivated
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .event, in: container, debugDescription: "unknown activation event \(event)")
        }
    }
}
