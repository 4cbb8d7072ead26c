/// A reason string from an APNs error response (`{"reason": "…"}`) or a GOAWAY payload.
///
/// An open set: a reason Apple adds tomorrow survives verbatim in `rawValue`. The 32 documented reasons
/// (Apple, "Handling notification responses from APNs") and the undocumented `BadEnvironmentKeyInToken`
/// are static members, each with its HTTP status and retry policy. It is an `Error` so rules can return
/// `Result<_, APNsReason>`.
public struct APNsReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible, Error {
    /// The reason string exactly as APNs sends it.
    public var rawValue: String

    /// Wraps any reason string, known or not.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The reason string.
    public var description: String { rawValue }

    // MARK: 400

    /// "The collapse identifier exceeds the maximum allowed size."
    public static let badCollapseId = APNsReason(rawValue: "BadCollapseId")
    /// "The specified device token is invalid" (also a valid token used in the wrong environment).
    public static let badDeviceToken = APNsReason(rawValue: "BadDeviceToken")
    /// "The apns-expiration value is invalid."
    public static let badExpirationDate = APNsReason(rawValue: "BadExpirationDate")
    /// "The apns-id value is invalid."
    public static let badMessageId = APNsReason(rawValue: "BadMessageId")
    /// "The apns-priority value is invalid."
    public static let badPriority = APNsReason(rawValue: "BadPriority")
    /// "The apns-topic value is invalid."
    public static let badTopic = APNsReason(rawValue: "BadTopic")
    /// "The device token doesn't match the specified topic."
    public static let deviceTokenNotForTopic = APNsReason(rawValue: "DeviceTokenNotForTopic")
    /// "One or more headers are repeated."
    public static let duplicateHeaders = APNsReason(rawValue: "DuplicateHeaders")
    /// "Idle timeout." (usually in a GOAWAY payload)
    public static let idleTimeout = APNsReason(rawValue: "IdleTimeout")
    /// "The apns-push-type value is invalid."
    public static let invalidPushType = APNsReason(rawValue: "InvalidPushType")
    /// "The device token isn't specified in the request :path."
    public static let missingDeviceToken = APNsReason(rawValue: "MissingDeviceToken")
    /// "The apns-topic header of the request isn't specified and is required."
    public static let missingTopic = APNsReason(rawValue: "MissingTopic")
    /// "The message payload is empty."
    public static let payloadEmpty = APNsReason(rawValue: "PayloadEmpty")
    /// "Pushing to this topic is not allowed."
    public static let topicDisallowed = APNsReason(rawValue: "TopicDisallowed")

    // MARK: 403

    /// "The certificate is invalid."
    public static let badCertificate = APNsReason(rawValue: "BadCertificate")
    /// "The client certificate is for the wrong environment."
    public static let badCertificateEnvironment = APNsReason(rawValue: "BadCertificateEnvironment")
    /// "The provider token is stale and a new token should be generated."
    public static let expiredProviderToken = APNsReason(rawValue: "ExpiredProviderToken")
    /// "The specified action is not allowed."
    public static let forbidden = APNsReason(rawValue: "Forbidden")
    /// "The provider token is not valid, or the token signature can't be verified."
    public static let invalidProviderToken = APNsReason(rawValue: "InvalidProviderToken")
    /// "No provider certificate was used to connect to APNs, and the authorization header is missing or no
    /// provider token is specified."
    public static let missingProviderToken = APNsReason(rawValue: "MissingProviderToken")
    /// "The key ID in the provider token isn't related to the key ID of the token used in the first push of
    /// this connection."
    public static let unrelatedKeyIdInToken = APNsReason(rawValue: "UnrelatedKeyIdInToken")
    /// "The key ID in the provider token doesn't match the environment."
    public static let badEnvironmentKeyIdInToken = APNsReason(rawValue: "BadEnvironmentKeyIdInToken")
    /// Undocumented, seen in production: "Environment mismatch between key and APNs endpoint"
    /// (APNSwift PR #229).
    public static let badEnvironmentKeyInToken = APNsReason(rawValue: "BadEnvironmentKeyInToken")

    // MARK: 404, 405, 410, 413, 429, 500, 503

    /// "The request contained an invalid :path value."
    public static let badPath = APNsReason(rawValue: "BadPath")
    /// "The specified :method value isn't POST."
    public static let methodNotAllowed = APNsReason(rawValue: "MethodNotAllowed")
    /// "The device token has expired."
    public static let expiredToken = APNsReason(rawValue: "ExpiredToken")
    /// "The device token is inactive for the specified topic."
    public static let unregistered = APNsReason(rawValue: "Unregistered")
    /// "The message payload is too large."
    public static let payloadTooLarge = APNsReason(rawValue: "PayloadTooLarge")
    /// "The provider's authentication token is being updated too often."
    public static let tooManyProviderTokenUpdates = APNsReason(rawValue: "TooManyProviderTokenUpdates")
    /// "Too many requests were made consecutively to the same device token."
    public static let tooManyRequests = APNsReason(rawValue: "TooManyRequests")
    /// "An internal server error occurred."
    public static let internalServerError = APNsReason(rawValue: "InternalServerError")
    /// "The service is unavailable."
    public static let serviceUnavailable = APNsReason(rawValue: "ServiceUnavailable")
    /// "The APNs server is shutting down."
    public static let shutdown = APNsReason(rawValue: "Shutdown")

    /// Every reason Apple documents (32), in the order of Apple's table.
    public static let documented: [APNsReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed,
        .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
        .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken,
        .badPath, .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge,
        .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
    ]

    /// Every reason Rouse knows: the documented ones plus `BadEnvironmentKeyInToken`.
    public static let known: [APNsReason] = documented + [.badEnvironmentKeyInToken]

    private static let statuses: [String: Int] = {
        var table: [String: Int] = [:]
        for reason in known { table[reason.rawValue] = reason.computedStatus }
        return table
    }()

    private var computedStatus: Int {
        switch rawValue {
        case "BadPath": 404
        case "MethodNotAllowed": 405
        case "ExpiredToken", "Unregistered": 410
        case "PayloadTooLarge": 413
        case "TooManyProviderTokenUpdates", "TooManyRequests": 429
        case "InternalServerError": 500
        case "ServiceUnavailable", "Shutdown": 503
        case "BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden",
            "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken",
            "BadEnvironmentKeyInToken":
            403
        default: 400
        }
    }

    /// Whether this is one of the reasons Rouse knows (documented or `BadEnvironmentKeyInToken`).
    public var isKnown: Bool { Self.statuses[rawValue] != nil }

    /// The HTTP status APNs sends with this reason, or `nil` for an unknown reason.
    public var status: Int? { Self.statuses[rawValue] }

    /// What a provider may do after this rejection (Apple: "Don't retry … BadDeviceToken,
    /// DeviceTokenNotForTopic, Forbidden, ExpiredToken, Unregistered, or PayloadTooLarge. You can retry with a
    /// delay … TooManyRequests." and "5XX … you may employ a back-off technique.").
    public var retryPolicy: APNsRetryPolicy {
        switch rawValue {
        case "BadDeviceToken", "DeviceTokenNotForTopic", "Forbidden", "ExpiredToken", "Unregistered",
            "PayloadTooLarge":
            .never
        case "TooManyRequests", "TooManyProviderTokenUpdates": .afterDelay
        case "InternalServerError", "ServiceUnavailable", "Shutdown", "IdleTimeout": .withBackoff
        case "ExpiredProviderToken": .afterNewProviderToken
        default: .never
        }
    }

    /// Whether the device token should be removed by the backend (410s, `BadDeviceToken`,
    /// `DeviceTokenNotForTopic`; Apple DTS: `Unregistered` "is an irrecoverable and final error").
    public var invalidatesDeviceToken: Bool {
        switch rawValue {
        case "Unregistered", "ExpiredToken", "BadDeviceToken", "DeviceTokenNotForTopic": true
        default: false
        }
    }
}

/// What a provider may do after an APNs rejection.
public enum APNsRetryPolicy: Sendable, Hashable {
    /// The same request will fail again: fix it or drop it.
    case never
    /// Retry the same request later (429).
    case afterDelay
    /// Retry with an exponential back-off, possibly on a new connection (5xx, GOAWAY reasons).
    case withBackoff
    /// Mint a new provider token, then retry once.
    case afterNewProviderToken
}
