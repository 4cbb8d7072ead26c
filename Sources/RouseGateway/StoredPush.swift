import RouseAPNs

/// A push the gateway holds for a device: what the provider sent plus what the gateway decided.
package struct StoredPush: Sendable, Hashable {
    /// The delivery id the device acknowledges: the store's sequence number (ordering), or an id above
    /// `StoredPush.ephemeralIDBase` for `apns-expiration: 0` pushes that are never stored.
    package var id: Int64
    /// The device the token belongs to.
    package var deviceID: String
    /// The device token the provider addressed (lowercase hex).
    package var token: String
    /// `apns-topic`.
    package var topic: String
    /// `apns-push-type`, if sent.
    package var pushType: String?
    /// `apns-priority`.
    package var priority: Int
    /// `apns-id` (the provider's or the one the gateway generated).
    package var apnsID: String
    /// `apns-collapse-id`, if sent.
    package var collapseID: String?
    /// `apns-expiration` as sent, in UNIX seconds (`nil`: absent; 0: deliver now or drop).
    package var expiration: Int64?
    /// When the gateway stops offering the push, UNIX milliseconds (expiration capped by the storage limit).
    package var expiresAt: Int64
    /// When the gateway accepted the push, UNIX milliseconds.
    package var receivedAt: Int64
    /// The payload bytes as the provider sent them.
    package var payload: [UInt8]
    /// The device's own sequence number for this push, in commit order (several nodes on PostgreSQL; `nil` on one
    /// node, where `id` is commit order already).
    package var deviceSeq: Int64?

    /// Ids at or above this are `apns-expiration: 0` pushes held only in memory.
    package static let ephemeralIDBase: Int64 = 1 << 62

    /// A push.
    package init(
        id: Int64, deviceID: String, token: String, topic: String, pushType: String?, priority: Int, apnsID: String,
        collapseID: String?, expiration: Int64?, expiresAt: Int64, receivedAt: Int64, payload: [UInt8]
    ) {
        self.id = id
        self.deviceID = deviceID
        self.token = token
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.apnsID = apnsID
        self.collapseID = collapseID
        self.expiration = expiration
        self.expiresAt = expiresAt
        self.receivedAt = receivedAt
        self.payload = payload
    }

    /// VoIP pushes jump the queue.
    package var isVoIP: Bool { pushType == APNsPushType.voip.rawValue }
    /// Background pushes keep a single slot per topic while the device is offline.
    package var isBackground: Bool { pushType == APNsPushType.background.rawValue }
    /// Whether this push lives only in memory (`apns-expiration: 0`).
    package var isEphemeral: Bool { id >= Self.ephemeralIDBase }
}

/// A device as the store knows it.
package struct DeviceRecord: Sendable, Hashable {
    /// How a device proves who it is.
    package enum Authentication: String, Sendable, Hashable {
        /// A credential from a one-time enrollment secret (`authorization: Bearer <device>.<secret>`).
        case secret
        /// A client certificate from the operator's CA whose subject CN is the device id.
        case certificate
    }

    /// The device id.
    package var id: String
    /// How it authenticates.
    package var authentication: Authentication
    /// SHA-256 of the credential secret (secret authentication only).
    package var credentialHash: [UInt8]?
    /// Enrollment time, UNIX milliseconds.
    package var createdAt: Int64
    /// Revocation time, UNIX milliseconds, if revoked.
    package var revokedAt: Int64?

    /// A device record.
    package init(
        id: String, authentication: Authentication, credentialHash: [UInt8]?, createdAt: Int64, revokedAt: Int64?
    ) {
        self.id = id
        self.authentication = authentication
        self.credentialHash = credentialHash
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// A push token: what a provider addresses, owned by one device for one topic.
package struct TokenRecord: Sendable, Hashable {
    /// Lowercase hex.
    package var token: String
    /// The owning device.
    package var deviceID: String
    /// The one topic the token receives.
    package var topic: String
    /// Creation time, UNIX milliseconds.
    package var createdAt: Int64
    /// When the device dropped it (410 Unregistered with this `timestamp` from then on).
    package var revokedAt: Int64?

    /// A token record.
    package init(token: String, deviceID: String, topic: String, createdAt: Int64, revokedAt: Int64?) {
        self.token = token
        self.deviceID = deviceID
        self.topic = topic
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// What a device's agent last reported about one of its handlers (`POST /device/v1/handlers`).
package struct HandlerReport: Sendable, Hashable {
    /// The reporting device.
    package var deviceID: String
    /// The handler's topic (bundle id).
    package var topic: String
    /// Missed VoIP reports inside the handler's strike window.
    package var strikes: Int
    /// Whether the agent stopped launching the handler for VoIP pushes (until it is registered again).
    package var voipBlocked: Bool
    /// When the gateway received the report, UNIX milliseconds.
    package var reportedAt: Int64

    /// A report.
    package init(deviceID: String, topic: String, strikes: Int, voipBlocked: Bool, reportedAt: Int64) {
        self.deviceID = deviceID
        self.topic = topic
        self.strikes = strikes
        self.voipBlocked = voipBlocked
        self.reportedAt = reportedAt
    }
}

/// A provider signing key registered with the gateway.
package struct ProviderKeyRecord: Sendable, Hashable {
    /// `kid`.
    package var keyID: String
    /// `iss`.
    package var teamID: String
    /// The public key, PEM.
    package var publicKeyPEM: String
    /// Bundle IDs the key may push to; `["*"]`: every topic. `nil` (a key stored without topics by an older
    /// version) authorizes nothing.
    package var topics: [String]?
    /// Creation time, UNIX milliseconds.
    package var createdAt: Int64
    /// Revocation time, UNIX milliseconds, if revoked.
    package var revokedAt: Int64?

    /// A key record.
    package init(
        keyID: String, teamID: String, publicKeyPEM: String, topics: [String]?, createdAt: Int64, revokedAt: Int64?
    ) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKeyPEM = publicKeyPEM
        self.topics = topics
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// Whether the key may push to every topic (`["*"]`).
    package var grantsEveryTopic: Bool { topics == [GatewayConfiguration.anyTopic] }

    /// The bundle IDs the APNs rules check pushes against: `nil` for every topic, none without topics.
    var bundleIDs: Set<String>? { GatewayConfiguration.bundleIDs(forTopics: topics) }
}
