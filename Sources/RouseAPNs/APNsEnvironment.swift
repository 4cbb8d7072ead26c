/// The APNs environment a server answers for or a credential is valid in.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    /// Development: `api.sandbox.push.apple.com`.
    case sandbox
    /// Production: `api.push.apple.com`.
    case production

    /// Apple's host for this environment ("api.sandbox.push.apple.com" / "api.push.apple.com").
    public var host: String {
        switch self {
        case .sandbox: "api.sandbox.push.apple.com"
        case .production: "api.push.apple.com"
        }
    }

    /// The other environment.
    public var other: APNsEnvironment {
        switch self {
        case .sandbox: .production
        case .production: .sandbox
        }
    }
}
