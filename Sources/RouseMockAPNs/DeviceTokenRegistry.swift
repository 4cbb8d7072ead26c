import RouseAPNs

/// The device tokens the mock knows: which topics each token is valid for, in which environment, and
/// whether it was unregistered or has expired. Lookups are O(1) (a hash table keyed by the token's digits,
/// whatever their case: `DeviceTokenKey`).
///
/// File format (`rouse mock-apns --tokens FILE`), JSON:
/// ```json
/// {
///   "unknownTokens": "accept",
///   "tokens": [
///     {"token": "a1b2…", "topics": ["com.example.app.voip"]},
///     {"token": "c3d4…", "topics": ["com.example.app"], "environment": "production"},
///     {"token": "e5f6…", "state": "unregistered", "unregisteredAt": 1767225600000},
///     {"token": "0789…", "state": "expired"}
///   ]
/// }
/// ```
/// - `unknownTokens`: `"accept"` (default: any well-formed token not listed is accepted) or `"reject"`
///   (a token not listed gives 400 BadDeviceToken).
/// - `token`: hex digits (case-insensitive), required.
/// - `topics`: the full `apns-topic` values the token is valid for (a PushKit token lists
///   `<bundle>.voip`); absent or empty means any topic. Another topic gives 400 DeviceTokenNotForTopic.
/// - `environment`: `"sandbox"` or `"production"`; absent means both. The other environment gives 400
///   BadDeviceToken ("also a valid token used in the wrong environment").
/// - `state`: `"active"` (default), `"unregistered"` (410 Unregistered with `timestamp` =
///   `unregisteredAt`, UNIX ms, default 0) or `"expired"` (410 ExpiredToken).
public struct DeviceTokenRegistry: Sendable {
    /// What to do with a well-formed token that is not in the registry.
    public enum UnknownTokenPolicy: String, Sendable, Hashable, Codable {
        /// Accept it (the default: a mock for load tests needs no list).
        case accept
        /// 400 BadDeviceToken.
        case reject
    }

    /// The lifecycle state of a token.
    public enum State: Sendable, Hashable {
        /// Deliverable.
        case active
        /// "The device token is inactive for the specified topic." 410 with `timestamp` (UNIX ms).
        case unregistered(since: APNsTime)
        /// "The device token has expired." 410.
        case expired
    }

    /// One token's record.
    public struct Entry: Sendable, Hashable {
        /// Full `apns-topic` values the token is valid for; empty means any.
        public var topics: Set<String>
        /// The environment the token belongs to; `nil` means both.
        public var environment: APNsEnvironment?
        /// Active, unregistered or expired.
        public var state: State

        /// A token record.
        public init(topics: Set<String> = [], environment: APNsEnvironment? = nil, state: State = .active) {
            self.topics = topics
            self.environment = environment
            self.state = state
        }
    }

    /// The verdict on one token.
    public struct Rejection: Sendable, Hashable {
        /// The reason to answer with.
        public var reason: APNsReason
        /// For 410 Unregistered: "the last time at which APNs confirmed that the device token was no longer
        /// valid for the topic", UNIX ms.
        public var timestamp: Int64?

        /// A verdict.
        public init(reason: APNsReason, timestamp: Int64? = nil) {
            self.reason = reason
            self.timestamp = timestamp
        }
    }

    /// Policy for tokens not listed.
    public var unknownTokens: UnknownTokenPolicy
    private var entries: [DeviceTokenKey: Entry]

    /// A registry with no tokens.
    public init(unknownTokens: UnknownTokenPolicy = .accept) {
        self.unknownTokens = unknownTokens
        self.entries = [:]
    }

    /// The number of tokens listed.
    public var count: Int { entries.count }

    /// Adds or replaces a token (hex, any case).
    public mutating func set(_ token: String, _ entry: Entry) { entries[DeviceTokenKey(token)] = entry }

    /// Removes a token.
    public mutating func remove(_ token: String) { entries[DeviceTokenKey(token)] = nil }

    /// The record of a token, if listed.
    public func entry(for token: some StringProtocol) -> Entry? { entries[DeviceTokenKey(token)] }

    /// Checks a well-formed token for a push to `topic` on a server in `environment`; `nil` means
    /// deliverable. Order: environment, topic, state.
    public func check(token: Substring, topic: String, environment: APNsEnvironment) -> Rejection? {
        guard let entry = entries[DeviceTokenKey(token)] else {
            return unknownTokens == .accept ? nil : Rejection(reason: .badDeviceToken)
        }
        if let tokenEnvironment = entry.environment, tokenEnvironment != environment {
            return Rejection(reason: .badDeviceToken)
        }
        if !entry.topics.isEmpty, !entry.topics.contains(topic) { return Rejection(reason: .deviceTokenNotForTopic) }
        switch entry.state {
        case .active: return nil
        case .unregistered(let since): return Rejection(reason: .unregistered, timestamp: since.milliseconds)
        case .expired: return Rejection(reason: .expiredToken)
        }
    }

    /// Lowercase hex; allocation-free check first since most tokens are already lowercase.
    static func normalized(_ token: Substring) -> String {
        for byte in token.utf8 where byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F") {
            return token.lowercased()
        }
        return String(token)
    }

    // MARK: File

    private struct File: Decodable {
        var unknownTokens: UnknownTokenPolicy?
        var tokens: [Token]
    }

    private struct Token: Decodable {
        var token: String
        var topics: [String]?
        var environment: String?
        var state: String?
        var unregisteredAt: Int64?
    }

    /// Parses the `--tokens` file format documented on this type; errors name the JSON path.
    public static func parse(json: [UInt8]) throws(MockAPNsError) -> DeviceTokenRegistry {
        let file: File
        switch JSONFileDecoding.decode(File.self, from: json) {
        case .success(let decoded): file = decoded
        case .failure(let failure): throw .badTokensFile(failure.detail)
        }
        var registry = DeviceTokenRegistry(unknownTokens: file.unknownTokens ?? .accept)
        registry.entries.reserveCapacity(file.tokens.count)
        for (index, token) in file.tokens.enumerated() {
            let at = "$.tokens[\(index)]"
            if APNsRules.checkDeviceToken(token.token) != nil {
                throw .badTokensFile("\(at).token: not an even number of hex digits")
            }
            var environment: APNsEnvironment?
            if let name = token.environment {
                guard let parsed = APNsEnvironment(rawValue: name) else {
                    throw .badTokensFile("\(at).environment: '\(name)' is not sandbox or production")
                }
                environment = parsed
            }
            let state: State
            switch token.state ?? "active" {
            case "active": state = .active
            case "unregistered": state = .unregistered(since: APNsTime(milliseconds: token.unregisteredAt ?? 0))
            case "expired": state = .expired
            case let other: throw .badTokensFile("\(at).state: '\(other)' is not active, unregistered or expired")
            }
            registry.set(token.token, Entry(topics: Set(token.topics ?? []), environment: environment, state: state))
        }
        return registry
    }
}
