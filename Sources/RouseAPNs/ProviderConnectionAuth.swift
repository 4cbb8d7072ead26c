/// The authentication state of one provider connection, as APNs keeps it: a value-type state machine,
/// driven by requests and an injected `now`, with no I/O and no clock reads.
///
/// Token connections follow Apple's "Establishing a token-based connection to APNs" [TOKEN] and
/// "Sending notification requests to APNs" [SEND]; certificate connections follow "Establishing a
/// certificate-based connection to APNs". The checks run in two steps, both per request:
/// 1. `authenticate(authorization:now:)` — credentials (before any header or payload rule);
/// 2. `authorizeTopic(_:)` — the topic against what the credential covers (after header syntax).
public struct ProviderConnectionAuth: Sendable {
    /// "APNs rejects any request whose token contains a timestamp that's more than one hour old." [TOKEN]
    public static let tokenLifetimeSeconds: Int64 = 3600
    /// "APNs report an error if you use a new token more than once every 20 minutes on the same
    /// connection." [TOKEN]
    public static let minimumTokenUpdateIntervalSeconds: Int64 = 20 * 60

    /// The environment the server answers for.
    public let serverEnvironment: APNsEnvironment
    /// The client certificate, for certificate connections; `nil` for token connections.
    public let certificate: ProviderCertificate?
    /// The keys as they were when the connection opened: "Adding a topic requires new connections."
    private let keys: APNsKeyRegistry
    /// The bundle IDs this server trusts client certificates for, whatever else they list; `nil`: every topic
    /// the certificate lists (APNs, whose CA is Apple's own).
    public let certificateBundleIDs: Set<String>?

    /// The team bound on the first authenticated push.
    public private(set) var boundTeamID: String?
    /// The key bound on the first authenticated push.
    public private(set) var boundKeyID: String?
    private var boundKey: APNsSigningKey?
    /// The token currently accepted on this connection.
    public private(set) var currentToken: String?
    private var currentTokenIssuedAt: Int64 = 0
    private var currentKey: APNsSigningKey?
    private var lastTokenChange: APNsTime?
    /// How many times a new token replaced the current one.
    public private(set) var tokenUpdates = 0
    /// Verification caches per token string: the last rejected token and the last verified-but-refused one.
    private var lastInvalid: (token: String, reason: APNsReason)?
    private var lastVerified: (token: String, key: APNsSigningKey, issuedAt: Int64)?

    /// A fresh connection. `certificate` is the verified (or not) client certificate, if one was presented;
    /// `certificateBundleIDs` limits what any certificate may push to (a server whose client CA is not Apple's).
    public init(
        serverEnvironment: APNsEnvironment, keys: APNsKeyRegistry, certificate: ProviderCertificate?,
        certificateBundleIDs: Set<String>? = nil
    ) {
        self.serverEnvironment = serverEnvironment
        self.keys = keys
        self.certificate = certificate
        self.certificateBundleIDs = certificateBundleIDs
    }

    /// Whether a valid provider token has been posted on this token connection (always true with a
    /// certificate).
    public var isAuthenticated: Bool { certificate != nil || currentToken != nil }

    /// The MAX_CONCURRENT_STREAMS the server should advertise now: "when using an authentication token,
    /// APNs allows only one stream until you post a request with a valid authentication token" [SEND].
    public func maxConcurrentStreams(configured: Int) -> Int { isAuthenticated ? configured : 1 }

    /// Step 1: checks the connection's credentials for one request; `nil` means authenticated.
    ///
    /// - Parameters:
    ///   - authorization: the `authorization` header value (`bearer <JWT>`), ignored with a certificate
    ///     ("Ignored when the connection uses a certificate").
    ///   - isKeyActive: whether a key of the connection's registry is still in force (not revoked since the
    ///     connection opened). Asked for the key of every request, whichever key it is — the first bound, a
    ///     related key switched to later, or the current one — so a revocation binds live connections; a revoked
    ///     key answers 403 InvalidProviderToken and changes nothing on the connection.
    public mutating func authenticate(
        authorization: String?, now: APNsTime, isKeyActive: (String) -> Bool = { _ in true }
    ) -> APNsReason? {
        if let certificate { return Self.check(certificate: certificate, environment: serverEnvironment) }
        // 403 MissingProviderToken: "No provider certificate was used to connect to APNs, and the
        // authorization header is missing or no provider token is specified." [RESP]
        guard let authorization, !authorization.isEmpty else { return .missingProviderToken }
        guard let token = Self.bearerToken(authorization) else { return .invalidProviderToken }
        if token.isEmpty { return .missingProviderToken }

        if let currentToken, token == currentToken {
            if let currentKey, !isKeyActive(currentKey.keyID) { return .invalidProviderToken }
            return checkIssuedAt(currentTokenIssuedAt, now: now)
        }
        if let lastInvalid, lastInvalid.token == token { return lastInvalid.reason }

        let key: APNsSigningKey
        let issuedAt: Int64
        if let lastVerified, lastVerified.token == token {
            key = lastVerified.key
            issuedAt = lastVerified.issuedAt
        } else {
            switch verify(token) {
            case .failure(let reason):
                lastInvalid = (String(token), reason)
                return reason
            case .success(let verified):
                key = verified.key
                issuedAt = verified.issuedAt
                lastVerified = (String(token), key, issuedAt)
            }
        }

        if !isKeyActive(key.keyID) { return .invalidProviderToken }
        if let reason = checkBinding(key) { return reason }
        if let reason = checkIssuedAt(issuedAt, now: now) { return reason }
        // 429 TooManyProviderTokenUpdates: "APNs report an error if you use a new token more than once every
        // 20 minutes on the same connection." [TOKEN]
        if currentToken != nil, let lastTokenChange,
            now.milliseconds - lastTokenChange.milliseconds < Self.minimumTokenUpdateIntervalSeconds * 1000
        {
            return .tooManyProviderTokenUpdates
        }
        if currentToken != nil { tokenUpdates += 1 }
        // "APNs relates a team ID and associated bundle IDs to a connection on the first push." [TOKEN]
        if boundKey == nil {
            boundKey = key
            boundKeyID = key.keyID
            boundTeamID = key.teamID
        }
        currentToken = String(token)
        currentTokenIssuedAt = issuedAt
        currentKey = key
        lastTokenChange = now
        lastVerified = nil
        return nil
    }

    /// Step 2: checks (and for single-topic certificates fills in) the topic; `nil` means allowed.
    ///
    /// Call after `authenticate` succeeded and after header syntax was checked.
    public func authorizeTopic(_ headers: inout APNsNotificationHeaders) -> APNsReason? {
        if let certificate {
            // "Certificate-based connection supports only a subset of push types" [SEND]: location is
            // token-only.
            if let pushType = headers.pushType, !pushType.allowedWithCertificate { return .topicDisallowed }
            guard let topic = headers.topic else {
                // "With a certificate, APNs uses the certificate's bundle ID as the default topic"; 400
                // MissingTopic: "The apns-topic header of the request isn't specified and is required."
                guard let defaultTopic = certificate.defaultTopic else { return .missingTopic }
                guard isTrustedForCertificates(defaultTopic) else { return .topicDisallowed }
                headers.topic = defaultTopic
                return nil
            }
            // 400 TopicDisallowed: "Pushing to this topic is not allowed." — the certificate does not list it, or
            // this server does not trust certificates for it.
            return certificate.topics.contains(topic) && isTrustedForCertificates(topic) ? nil : .topicDisallowed
        }
        // "apns-topic … required for token auth".
        guard let topic = headers.topic else { return .missingTopic }
        guard let key = currentKey else { return .missingProviderToken }
        if let pushType = headers.pushType {
            guard let bundleID = pushType.bundleID(fromTopic: topic) else { return .badTopic }
            return key.allows(bundleID: bundleID) ? nil : .topicDisallowed
        }
        // No push type: accept the topic if it, or it without any known suffix, is allowed.
        return Self.topic(topic, isCoveredBy: { key.allows(bundleID: $0) }) ? nil : .topicDisallowed
    }

    /// Whether `certificateBundleIDs` covers `topic`, as a key's bundle IDs cover topics.
    private func isTrustedForCertificates(_ topic: String) -> Bool {
        guard let certificateBundleIDs else { return true }
        return Self.topic(topic) { certificateBundleIDs.contains(String($0)) }
    }

    /// Whether `allows` grants `topic` itself or its bundle ID (the topic without a known push-type suffix).
    private static func topic(_ topic: String, isCoveredBy allows: (Substring) -> Bool) -> Bool {
        if allows(Substring(topic)) { return true }
        return APNsPushType.known.contains { type in
            guard let bundleID = type.bundleID(fromTopic: topic), bundleID.count < topic.count else { return false }
            return allows(bundleID)
        }
    }

    // MARK: Rules

    /// Certificate connections: 403 BadCertificate "The certificate is invalid." and 403
    /// BadCertificateEnvironment "The client certificate is for the wrong environment." [RESP]
    static func check(certificate: ProviderCertificate, environment: APNsEnvironment) -> APNsReason? {
        guard certificate.verification == .ok else { return .badCertificate }
        return certificate.environments.contains(environment) ? nil : .badCertificateEnvironment
    }

    /// `bearer <token>` (scheme case-insensitive) → the token; `nil` for any other scheme.
    static func bearerToken(_ authorization: String) -> Substring? {
        let utf8 = authorization.utf8
        guard utf8.count >= 7 else { return nil }
        var index = utf8.startIndex
        for expected in "bearer ".utf8 {
            let byte = utf8[index]
            let lower = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
            if lower != expected { return nil }
            index = utf8.index(after: index)
        }
        return Substring(utf8[index...])
    }

    /// 403 InvalidProviderToken: "The provider token is not valid, or the token signature can't be
    /// verified." [RESP] — unparseable, unknown `kid`, `iss` not the key's team, bad signature.
    private func verify(_ token: Substring) -> Result<(key: APNsSigningKey, issuedAt: Int64), APNsReason> {
        let parsed: UnverifiedProviderToken
        do {
            parsed = try ProviderToken.parse(token)
        } catch {
            return .failure(.invalidProviderToken)
        }
        guard let key = keys[parsed.token.keyID], key.teamID == parsed.token.teamID,
            parsed.isSignatureValid(for: key.publicKey)
        else { return .failure(.invalidProviderToken) }
        return .success((key, parsed.token.issuedAt))
    }

    /// Binding rules for a verified key against the connection and the endpoint.
    private func checkBinding(_ key: APNsSigningKey) -> APNsReason? {
        if let boundKey, boundKey.keyID != key.keyID {
            // "APNs doesn't support authentication tokens from multiple developer accounts over a single
            // connection." [TOKEN]
            if boundKey.teamID != key.teamID { return .invalidProviderToken }
            // 403 UnrelatedKeyIdInToken: "The key ID in the provider token isn't related to the key ID of the
            // token used in the first push of this connection." [RESP]
            if boundKey.isTopicSpecific {
                let related = boundKey.relatedKeyID == key.keyID || key.relatedKeyID == boundKey.keyID
                if !related { return .unrelatedKeyIdInToken }
            } else if key.isTopicSpecific {
                return .unrelatedKeyIdInToken
            } else if boundKey.environments != key.environments {
                // "a later push … with a team-scoped key from the other environment" [TOKEN]
                return .badEnvironmentKeyIdInToken
            }
        }
        // 403 BadEnvironmentKeyIdInToken: "The key ID in the provider token doesn't match the environment."
        return key.environments.contains(serverEnvironment) ? nil : .badEnvironmentKeyIdInToken
    }

    /// `iat` "must be no more than one hour from the current time": older gives 403 ExpiredProviderToken
    /// ("The provider token is stale and a new token should be generated."); more than an hour in the future
    /// is treated as InvalidProviderToken.
    private func checkIssuedAt(_ issuedAt: Int64, now: APNsTime) -> APNsReason? {
        // `iat` comes from the network: compare without arithmetic that could overflow.
        let nowSeconds = now.seconds
        if issuedAt < nowSeconds,
            nowSeconds.subtractingReportingOverflow(issuedAt).overflow
                || nowSeconds - issuedAt > Self.tokenLifetimeSeconds
        {
            return .expiredProviderToken
        }
        if issuedAt > nowSeconds,
            issuedAt.subtractingReportingOverflow(nowSeconds).overflow
                || issuedAt - nowSeconds > Self.tokenLifetimeSeconds
        {
            return .invalidProviderToken
        }
        return nil
    }
}
