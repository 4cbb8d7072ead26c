/// A priority class (the session's role), WirePlumber-style: Alert > Call > Assistant > Navigation >
/// Notification > Media > Ambient. `call` is granted only through the call path.
public enum ActivationPriority: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// Background sound; always mixable whatever the category.
    case ambient
    /// Music, video, podcasts.
    case media
    /// Short notification sounds.
    case notification
    /// Turn-by-turn prompts.
    case navigation
    /// Voice assistant.
    case assistant
    /// A reported call (CallKit-like path only).
    case call
    /// Emergency and alarm sounds; the only class above calls.
    case alert

    /// The numeric level (B9 of the agent reference: 0, 10, 20, 30, 40, 50, 100).
    public var level: Int {
        switch self {
        case .ambient: 0
        case .media: 10
        case .notification: 20
        case .navigation: 30
        case .assistant: 40
        case .call: 50
        case .alert: 100
        }
    }

    /// Whether a mixable session of this role keeps playing when a non-mixable session of equal or higher
    /// priority activates (the role policy is "mix", as WirePlumber's Multimedia and Notification roles);
    /// mixable sessions of the other roles are interrupted (corked).
    public var keepsMixingUnderNonMixable: Bool { self <= .notification }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.level < rhs.level }
}
