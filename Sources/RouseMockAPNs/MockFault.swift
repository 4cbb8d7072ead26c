import RouseAPNs

/// HTTP/2 error codes used by the mock's faults (RFC 9113 §7), as raw wire values.
public enum MockHTTP2ErrorCode {
    /// NO_ERROR (graceful GOAWAY, e.g. APNs `Shutdown`).
    public static let noError: UInt32 = 0x0
    /// PROTOCOL_ERROR.
    public static let protocolError: UInt32 = 0x1
    /// INTERNAL_ERROR.
    public static let internalError: UInt32 = 0x2
    /// REFUSED_STREAM: the stream was not processed and may be retried.
    public static let refusedStream: UInt32 = 0x7
    /// CANCEL.
    public static let cancel: UInt32 = 0x8
    /// ENHANCE_YOUR_CALM.
    public static let enhanceYourCalm: UInt32 = 0xB

    /// Names accepted in fault files.
    static let byName: [String: UInt32] = [
        "NO_ERROR": 0x0, "PROTOCOL_ERROR": 0x1, "INTERNAL_ERROR": 0x2, "FLOW_CONTROL_ERROR": 0x3,
        "SETTINGS_TIMEOUT": 0x4, "STREAM_CLOSED": 0x5, "FRAME_SIZE_ERROR": 0x6, "REFUSED_STREAM": 0x7,
        "CANCEL": 0x8, "COMPRESSION_ERROR": 0x9, "CONNECT_ERROR": 0xA, "ENHANCE_YOUR_CALM": 0xB,
        "INADEQUATE_SECURITY": 0xC, "HTTP_1_1_REQUIRED": 0xD,
    ]
}

/// Which stream id a scripted GOAWAY announces as the last one processed.
public enum MockLastStreamID: Sendable, Hashable {
    /// The stream of the triggering request: it is processed and answered, then GOAWAY.
    case current
    /// The stream before it (id − 2, at least 0): the triggering request is not processed.
    case previous
    /// A fixed id (0: nothing on this connection was processed).
    case id(Int32)
}

/// A scripted GOAWAY.
public struct MockGoAway: Sendable, Hashable {
    /// The HTTP/2 error code.
    public var errorCode: UInt32
    /// The last stream id to announce.
    public var lastStreamID: MockLastStreamID
    /// The opaque debug data; APNs sends JSON with a `reason` key.
    public var debugData: [UInt8]

    /// A GOAWAY with raw debug data.
    public init(
        errorCode: UInt32 = MockHTTP2ErrorCode.noError, lastStreamID: MockLastStreamID = .current, debugData: [UInt8]
    ) {
        self.errorCode = errorCode
        self.lastStreamID = lastStreamID
        self.debugData = debugData
    }

    /// A GOAWAY carrying `{"reason":"…"}` as APNs does ("The payload of the GOAWAY frame includes JSON data
    /// with a reason key").
    public init(
        errorCode: UInt32 = MockHTTP2ErrorCode.noError, lastStreamID: MockLastStreamID = .current, reason: APNsReason
    ) {
        self.init(errorCode: errorCode, lastStreamID: lastStreamID, debugData: JSONText.errorBody(reason: reason))
    }
}

/// What a fault does to the request it matches.
public enum MockFaultAction: Sendable, Hashable {
    /// Send GOAWAY. With `.current` the request is processed and answered first; otherwise it is not
    /// processed and not answered.
    case goAway(MockGoAway)
    /// RST_STREAM(REFUSED_STREAM) on the request's stream; not processed.
    case refusedStream
    /// Reset the TCP connection (close with SO_LINGER 0); not processed.
    case tcpReset
    /// Stop reading and answering on the connection, PINGs included; not processed.
    case blackhole
    /// Answer after this many extra milliseconds (then process normally).
    case latency(milliseconds: Int)
    /// Answer this and the next `count − 1` requests with `reason` (status from the reason, 500 if unknown),
    /// without processing them: a 500/503 burst, or any reason by script.
    case status(reason: APNsReason, status: Int, count: Int)

    /// GOAWAY NO_ERROR `{"reason":"Shutdown"}` after answering the current request.
    public static let shutdown = MockFaultAction.goAway(MockGoAway(reason: .shutdown))
    /// GOAWAY NO_ERROR `{"reason":"IdleTimeout"}` after answering the current request.
    public static let idleTimeout = MockFaultAction.goAway(MockGoAway(reason: .idleTimeout))
}

/// Which requests a fault applies to; every criterion given must hold.
public struct MockFaultMatch: Sendable, Hashable {
    /// Only requests for this device token (lowercase hex).
    public var deviceToken: String?
    /// Only the n-th request the server handles (1-based, across connections).
    public var nth: Int?
    /// Only every n-th request (n, 2n, 3n, …).
    public var every: Int?
    /// Only from this many milliseconds after the mock started.
    public var afterMilliseconds: Int64?
    /// Only until this many milliseconds after the mock started.
    public var untilMilliseconds: Int64?

    /// A match; no criteria matches every request.
    public init(
        deviceToken: String? = nil,
        nth: Int? = nil,
        every: Int? = nil,
        afterMilliseconds: Int64? = nil,
        untilMilliseconds: Int64? = nil
    ) {
        self.deviceToken = deviceToken?.lowercased()
        self.nth = nth
        self.every = every
        self.afterMilliseconds = afterMilliseconds
        self.untilMilliseconds = untilMilliseconds
    }

    func matches(requestNumber: Int, deviceToken token: Substring?, sinceStart: Int64) -> Bool {
        if let nth, requestNumber != nth { return false }
        if let every, every > 0, requestNumber % every != 0 { return false }
        if let afterMilliseconds, sinceStart < afterMilliseconds { return false }
        if let untilMilliseconds, sinceStart >= untilMilliseconds { return false }
        if let deviceToken {
            guard let token, DeviceTokenRegistry.normalized(token) == deviceToken else { return false }
        }
        return true
    }
}

/// One scripted fault: a match, an action, and how many times it may fire.
public struct MockFaultRule: Sendable, Hashable {
    /// An id to remove the rule at run time.
    public var id: String
    /// Which requests.
    public var match: MockFaultMatch
    /// What happens.
    public var action: MockFaultAction
    /// How many times the rule may fire; `nil` is unlimited.
    public var times: Int?

    /// A rule.
    public init(id: String, match: MockFaultMatch = MockFaultMatch(), action: MockFaultAction, times: Int? = nil) {
        self.id = id
        self.match = match
        self.action = action
        self.times = times
    }
}
