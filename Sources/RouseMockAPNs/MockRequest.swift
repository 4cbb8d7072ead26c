import RouseAPNs

/// Who is on the other end of a connection, as the HTTP/2 kernel learned it.
public struct MockConnectionInfo: Sendable {
    /// The kernel's connection id (also in records and logs).
    public var id: UInt64
    /// The peer address, e.g. `127.0.0.1:51234`.
    public var remoteAddress: String
    /// The client certificate, if the client presented one (a certificate connection); `nil` for token
    /// connections.
    public var certificate: ProviderCertificate?

    /// Connection facts.
    public init(id: UInt64, remoteAddress: String, certificate: ProviderCertificate? = nil) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.certificate = certificate
    }
}

/// One request as the kernel hands it over, once the stream's END_STREAM arrived.
public struct MockRequest: Sendable {
    /// `:method`.
    public var method: String
    /// `:path`.
    public var path: String
    /// Regular headers in wire order, names lowercase (pseudo-headers other than `:method`/`:path` removed).
    public var headers: [(name: String, value: String)]
    /// The request body.
    public var body: [UInt8]
    /// The HTTP/2 stream id.
    public var streamID: Int32

    /// A request.
    /// The total body length received; larger than `body.count` when the kernel kept only a prefix of an
    /// oversized body. PayloadTooLarge is decided on this.
    public var bodyLength: Int {
        get { max(receivedBodyLength ?? body.count, body.count) }
        set { receivedBodyLength = newValue }
    }
    private var receivedBodyLength: Int?
    /// Whether a pseudo-header was repeated (or unknown): answered with DuplicateHeaders.
    public var duplicatePseudoHeaders: Bool

    /// A request. `bodyLength` defaults to `body.count`.
    public init(
        method: String,
        path: String,
        headers: [(name: String, value: String)],
        body: [UInt8],
        bodyLength: Int? = nil,
        duplicatePseudoHeaders: Bool = false,
        streamID: Int32
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.receivedBodyLength = bodyLength
        self.duplicatePseudoHeaders = duplicatePseudoHeaders
        self.streamID = streamID
    }
}

/// A response for one stream.
public struct MockResponse: Sendable {
    /// `:status`.
    public var status: Int
    /// Response headers (lowercase names), e.g. `apns-id`, `apns-unique-id`, `content-type`.
    public var headers: [(name: String, value: String)]
    /// The body: empty on success, `{"reason":…}` on errors.
    public var body: [UInt8]
    /// Extra delay before the response is sent, in milliseconds (latency faults); 0 means none.
    public var delayMilliseconds: Int

    /// A response.
    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8], delayMilliseconds: Int = 0) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delayMilliseconds = delayMilliseconds
    }
}

/// What the kernel must do for one request.
public enum MockAction: Sendable {
    /// Send this response on the request's stream.
    case respond(MockResponse)
    /// Send GOAWAY (error code, last stream id, debug data) without answering the stream, then close after
    /// the streams up to `lastStreamID` finished.
    case goAway(errorCode: UInt32, lastStreamID: Int32, debugData: [UInt8])
    /// RST_STREAM the request's stream with this error code.
    case resetStream(errorCode: UInt32)
    /// Reset the TCP connection at once (SO_LINGER 0 and close).
    case resetConnection
    /// Stop reading and writing on the connection (PINGs unanswered) until the client gives up.
    case blackhole
}

/// A GOAWAY frame's contents, resolved to a stream id.
public struct MockGoAwayFrame: Sendable, Hashable {
    /// The HTTP/2 error code.
    public var errorCode: UInt32
    /// The last stream id processed.
    public var lastStreamID: Int32
    /// Debug data (APNs: `{"reason":…}`).
    public var debugData: [UInt8]

    /// A frame.
    public init(errorCode: UInt32, lastStreamID: Int32, debugData: [UInt8]) {
        self.errorCode = errorCode
        self.lastStreamID = lastStreamID
        self.debugData = debugData
    }
}

/// The engine's answer to one request: an action plus side effects on the connection.
public struct MockDecision: Sendable {
    /// What to do with the stream or connection.
    public var action: MockAction
    /// A GOAWAY to send right after the response (`.respond` only).
    public var goAwayAfterResponse: MockGoAwayFrame?
    /// If set, send SETTINGS with MAX_CONCURRENT_STREAMS = this value now (before the response).
    public var advertiseMaxConcurrentStreams: Int?

    /// A decision.
    public init(
        action: MockAction,
        goAwayAfterResponse: MockGoAwayFrame? = nil,
        advertiseMaxConcurrentStreams: Int? = nil
    ) {
        self.action = action
        self.goAwayAfterResponse = goAwayAfterResponse
        self.advertiseMaxConcurrentStreams = advertiseMaxConcurrentStreams
    }

    /// The response, if the action is `.respond`.
    public var response: MockResponse? {
        if case .respond(let response) = action { return response }
        return nil
    }
}

/// The engine's per-connection state. The kernel keeps one per connection and passes it `inout` to
/// `MockAPNs.handle` (one stream at a time per connection, on the connection's thread).
public struct MockConnection: Sendable {
    /// The connection's facts.
    public let info: MockConnectionInfo
    /// Authentication state (token binding, update rate, certificate).
    public internal(set) var auth: ProviderConnectionAuth
    /// The MAX_CONCURRENT_STREAMS value last advertised (the kernel sends it in its first SETTINGS).
    public internal(set) var advertisedMaxConcurrentStreams: Int
    /// Requests handled on this connection.
    public internal(set) var requestCount = 0
    /// Whether the last push on this connection was rejected (stream-limit drop in effect).
    var droppedAfterRejection = false
    /// The last `authorization` value recorded on this connection and its redacted form.
    var redaction: PushRecord.RedactionCache?

    init(info: MockConnectionInfo, auth: ProviderConnectionAuth, advertisedMaxConcurrentStreams: Int) {
        self.info = info
        self.auth = auth
        self.advertisedMaxConcurrentStreams = advertisedMaxConcurrentStreams
    }
}
