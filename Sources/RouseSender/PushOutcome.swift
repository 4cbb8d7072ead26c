import RouseAPNs

/// Whether APNs may have acted on a push that failed without an answer.
public enum PushProcessing: String, Sendable, Hashable {
    /// Provably not processed (never sent, REFUSED_STREAM, above a GOAWAY's last-stream-id, connect failure).
    case no
    /// Sent, but no answer arrived: APNs may or may not have delivered it.
    case unknown
}

/// The one terminal outcome of a push.
public enum PushOutcome: Sendable, Hashable {
    /// APNs accepted the push (200) and answered with this `apns-id`.
    case delivered(apnsID: String)
    /// APNs (or the local pre-flight, with the same reason string) refused the push. `timestamp` is the 410
    /// `timestamp` in UNIX milliseconds.
    case rejected(reason: APNsReason, timestamp: Int64?)
    /// No answer from APNs: a transport error, a deadline, or a shutdown.
    case failed(SendError, processed: PushProcessing)

    /// True for `.delivered`.
    public var isDelivered: Bool {
        if case .delivered = self { return true }
        return false
    }

    /// The rejection reason, if rejected.
    public var reason: APNsReason? {
        if case .rejected(let reason, _) = self { return reason }
        return nil
    }
}

/// A push's outcome with what it took to get there.
public struct PushResult: Sendable {
    /// The push as sent (with the `apns-id` Rouse generated when it had none).
    public var push: APNsPush
    /// The terminal outcome.
    public var outcome: PushOutcome
    /// Requests put on the wire for this push (0 for pre-flight refusals and pushes never sent).
    public var attempts: Int
    /// Resends after an unprocessed stream, a 429/5xx or an expired provider token.
    public var retries: Int
    /// From submission to outcome.
    public var latency: Duration
    /// True when the pre-flight refused the push and nothing was sent.
    public var refusedBeforeSending: Bool

    /// A result.
    public init(
        push: APNsPush, outcome: PushOutcome, attempts: Int, retries: Int, latency: Duration,
        refusedBeforeSending: Bool = false
    ) {
        self.push = push
        self.outcome = outcome
        self.attempts = attempts
        self.retries = retries
        self.latency = latency
        self.refusedBeforeSending = refusedBeforeSending
    }
}
