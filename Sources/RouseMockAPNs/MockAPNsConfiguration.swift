import RouseAPNs

/// Everything `rouse mock-apns` can be told: environment, credentials it accepts, device tokens, limits and
/// faults.
public struct MockAPNsConfiguration: Sendable {
    /// The environment the mock answers for. Sandbox adds `apns-unique-id` ("only available in the
    /// Development environment").
    public var environment: APNsEnvironment
    /// The signing keys accepted for token authentication.
    public var keys: APNsKeyRegistry
    /// The device tokens and what they answer.
    public var devices: DeviceTokenRegistry
    /// MAX_CONCURRENT_STREAMS advertised to authenticated connections (APNs was seen to send 1000).
    public var maxConcurrentStreams: Int
    /// Mimic the drop real APNs was seen to do (rdar 27870881): after a rejected push, advertise
    /// MAX_CONCURRENT_STREAMS 1; back to `maxConcurrentStreams` after the next accepted push. 410s do not
    /// count ("Note that status code 410 isn't considered an error condition").
    public var dropStreamLimitAfterRejection: Bool
    /// Per-device-token limit that gives 429 TooManyRequests ("Too many requests were made consecutively to
    /// the same device token"); `nil` disables it.
    public var perTokenRateLimit: MockRateLimit?
    /// The faults active from the start.
    public var faults: [MockFaultRule]
    /// How many push records are kept in memory (oldest dropped first); bounds memory on long runs.
    public var recordLimit: Int

    /// A configuration; defaults are a permissive sandbox with APNs' observed limits.
    public init(
        environment: APNsEnvironment = .sandbox,
        keys: APNsKeyRegistry = APNsKeyRegistry(),
        devices: DeviceTokenRegistry = DeviceTokenRegistry(),
        maxConcurrentStreams: Int = 1000,
        dropStreamLimitAfterRejection: Bool = true,
        perTokenRateLimit: MockRateLimit? = nil,
        faults: [MockFaultRule] = [],
        recordLimit: Int = 100_000
    ) {
        self.environment = environment
        self.keys = keys
        self.devices = devices
        self.maxConcurrentStreams = maxConcurrentStreams
        self.dropStreamLimitAfterRejection = dropStreamLimitAfterRejection
        self.perTokenRateLimit = perTokenRateLimit
        self.faults = faults
        self.recordLimit = recordLimit
    }
}

/// At most `maxRequests` pushes per device token in any fixed window of `windowMilliseconds`.
public struct MockRateLimit: Sendable, Hashable {
    /// Pushes allowed per window.
    public var maxRequests: Int
    /// Window length in milliseconds.
    public var windowMilliseconds: Int64

    /// A limit.
    public init(maxRequests: Int, windowMilliseconds: Int64) {
        self.maxRequests = maxRequests
        self.windowMilliseconds = windowMilliseconds
    }
}
