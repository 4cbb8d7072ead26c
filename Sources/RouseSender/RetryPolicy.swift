import RouseAPNs

/// What to do after an attempt; decided by `SenderRetryPolicy`, never by I/O code.
public enum RetryDecision: Sendable, Hashable {
    /// Done: this is the push's outcome.
    case finish(PushOutcome)
    /// Send again at once (the stream was provably not processed).
    case resend
    /// Send again no earlier than `after` from now (429, 5xx).
    case resendAfter(Duration)
    /// Mint a new provider token, then send again once.
    case resendWithNewToken
}

/// What one attempt gave, as the retry policy sees it.
public enum AttemptResult: Sendable, Hashable {
    /// An HTTP response.
    case response(status: Int, apnsID: String?, body: [UInt8])
    /// Provably not processed; `goAwayReason` when a GOAWAY said why.
    case notProcessed(String, goAwayReason: APNsReason?)
    /// Sent, no answer.
    case failed(String)
}

/// Retries only where safe. Apple: "Don't retry … BadDeviceToken, DeviceTokenNotForTopic, Forbidden,
/// ExpiredToken, Unregistered, or PayloadTooLarge. You can retry with a delay … TooManyRequests" and "5XX …
/// you may employ a back-off technique".
public struct SenderRetryPolicy: Sendable, Hashable {
    /// Resends of provably unprocessed streams per push.
    public var maxUnprocessedResends: Int
    /// Retries after 429 or 5xx per push.
    public var maxStatusRetries: Int
    /// First backoff after a 429/5xx; doubles per consecutive error, with jitter in [50 %, 100 %].
    public var baseBackoff: Duration
    /// Backoff cap.
    public var maxBackoff: Duration

    /// Defaults: 5 resends, 3 status retries, 50 ms doubling up to 5 s.
    public init(
        maxUnprocessedResends: Int = 5, maxStatusRetries: Int = 3, baseBackoff: Duration = .milliseconds(50),
        maxBackoff: Duration = .seconds(5)
    ) {
        self.maxUnprocessedResends = maxUnprocessedResends
        self.maxStatusRetries = maxStatusRetries
        self.baseBackoff = baseBackoff
        self.maxBackoff = maxBackoff
    }

    /// The jittered backoff after `errors` consecutive errors (1 = the first); `unit` in [0, 1).
    public func backoff(errors: Int, unit: Double) -> Duration {
        let exponent = min(max(errors - 1, 0), 16)
        var delay = baseBackoff * (1 << exponent)
        if delay > maxBackoff { delay = maxBackoff }
        return delay * (0.5 + 0.5 * unit)
    }

    /// Decides after one attempt.
    ///
    /// - Parameters:
    ///   - unprocessedResends, statusRetries, tokenRetried: what this push already used.
    ///   - backoff: the delay a 429/5xx retry would wait (shared per connection by the caller).
    ///   - remaining: time left before the push's deadline.
    public func decide(
        _ result: AttemptResult, unprocessedResends: Int, statusRetries: Int, tokenRetried: Bool, backoff: Duration,
        remaining: Duration
    ) -> RetryDecision {
        switch result {
        case .failed(let detail):
            return .finish(.failed(.transport(detail), processed: .unknown))
        case .notProcessed(let detail, let goAwayReason):
            if let goAwayReason, goAwayReason.retryPolicy == .never {
                return .finish(.failed(.goAway(goAwayReason.rawValue), processed: .no))
            }
            if unprocessedResends >= maxUnprocessedResends {
                return .finish(.failed(.tooManyResends(detail), processed: .no))
            }
            return .resend
        case .response(let status, let apnsID, let body):
            if status == 200 { return .finish(.delivered(apnsID: apnsID ?? "")) }
            let parsed = APNsErrorBody.parse(body)
            let reason = parsed?.reason ?? APNsReason(rawValue: "HTTP\(status)")
            let rejected = PushOutcome.rejected(reason: reason, timestamp: parsed?.timestamp)
            let policy: APNsRetryPolicy
            if parsed == nil {
                policy = status == 429 || status >= 500 ? .withBackoff : .never
            } else {
                policy = reason.retryPolicy
            }
            switch policy {
            case .never:
                return .finish(rejected)
            case .afterNewProviderToken:
                return tokenRetried ? .finish(rejected) : .resendWithNewToken
            case .afterDelay, .withBackoff:
                guard statusRetries < maxStatusRetries, backoff < remaining else { return .finish(rejected) }
                return .resendAfter(backoff)
            }
        }
    }
}

/// A small deterministic random generator (SplitMix64) for jitter; seeded, so tests are repeatable.
public struct JitterSource: Sendable, Hashable {
    private var state: UInt64

    /// A generator from `seed`.
    public init(seed: UInt64) { state = seed }

    /// A value in [0, 1).
    public mutating func unit() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}
