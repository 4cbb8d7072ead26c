import Crypto

/// A provider signing key as the APNs server knows it: the input of token verification.
public struct APNsSigningKey: Sendable {
    /// What a key may push to.
    public enum Scope: Sendable, Hashable {
        /// A team-scoped key ("limited to Sandbox or Production, at most 2 per environment"). `bundleIDs`
        /// lists the team's apps; `nil` means any topic.
        case team(bundleIDs: Set<String>?)
        /// A topic-specific key, valid only for these bundle IDs ("up to 400 topics per key").
        case topics(Set<String>)
    }

    /// The team ID (`iss`).
    public var teamID: String
    /// The 10-character key ID (`kid`).
    public var keyID: String
    /// The public half of the key, to verify ES256 signatures.
    public var publicKey: P256.Signing.PublicKey
    /// The environments the key may be used in.
    public var environments: Set<APNsEnvironment>
    /// Team-scoped or topic-specific.
    public var scope: Scope
    /// For a topic-specific key, its one related key ("at most one related key"), if any.
    public var relatedKeyID: String?

    /// A key record.
    public init(
        teamID: String,
        keyID: String,
        publicKey: P256.Signing.PublicKey,
        environments: Set<APNsEnvironment> = Set(APNsEnvironment.allCases),
        scope: Scope = .team(bundleIDs: nil),
        relatedKeyID: String? = nil
    ) {
        self.teamID = teamID
        self.keyID = keyID
        self.publicKey = publicKey
        self.environments = environments
        self.scope = scope
        self.relatedKeyID = relatedKeyID
    }

    /// A key record from the public key in PEM (`BEGIN PUBLIC KEY`, as `openssl ec -pubout` writes it).
    public init(
        teamID: String,
        keyID: String,
        publicKeyPEM: String,
        environments: Set<APNsEnvironment> = Set(APNsEnvironment.allCases),
        scope: Scope = .team(bundleIDs: nil),
        relatedKeyID: String? = nil
    ) throws(ProviderTokenError) {
        let publicKey: P256.Signing.PublicKey
        do {
            publicKey = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        } catch {
            throw .badPrivateKey("public key \(keyID): \(error)")
        }
        self.init(
            teamID: teamID,
            keyID: keyID,
            publicKey: publicKey,
            environments: environments,
            scope: scope,
            relatedKeyID: relatedKeyID
        )
    }

    /// Whether the key is topic-specific.
    public var isTopicSpecific: Bool {
        if case .topics = scope { return true }
        return false
    }

    /// Whether the key may push to `bundleID`.
    public func allows(bundleID: Substring) -> Bool {
        switch scope {
        case .team(let bundleIDs):
            guard let bundleIDs else { return true }
            return bundleIDs.contains(String(bundleID))
        case .topics(let bundleIDs):
            return bundleIDs.contains(String(bundleID))
        }
    }
}

/// The keys an APNs server accepts, by key ID (O(1) lookup).
public struct APNsKeyRegistry: Sendable {
    private var byKeyID: [String: APNsSigningKey]

    /// A registry of `keys`; a later key with the same ID replaces an earlier one.
    public init(_ keys: [APNsSigningKey] = []) {
        var table: [String: APNsSigningKey] = [:]
        for key in keys { table[key.keyID] = key }
        byKeyID = table
    }

    /// The key with this ID, if known.
    public subscript(keyID: String) -> APNsSigningKey? { byKeyID[keyID] }

    /// Adds or replaces a key.
    public mutating func insert(_ key: APNsSigningKey) { byKeyID[key.keyID] = key }

    /// Removes a key (a revoked key).
    public mutating func remove(keyID: String) { byKeyID[keyID] = nil }

    /// All keys, in no particular order.
    public var keys: [APNsSigningKey] { Array(byKeyID.values) }
}
