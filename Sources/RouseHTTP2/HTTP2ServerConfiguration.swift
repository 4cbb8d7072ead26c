import Glibc

/// Everything an `HTTP2Server` needs to know before it starts.
public struct HTTP2ServerConfiguration: Sendable {
    /// Where to listen (`127.0.0.1:2197`, `[::1]:0`, …). Port 0 picks a free port.
    public var listenAddress: String = "127.0.0.1:0"
    /// TLS (with ALPN h2). `nil` serves h2c with prior knowledge, for debugging.
    public var tls: TLSConfiguration?
    /// Also serve HTTP/1.1 (RFC 9112) on TLS connections whose ALPN selected `http/1.1` (clients that do not offer
    /// `h2`, such as Python's requests): one request at a time per connection, parsed by the bounded
    /// `HTTP1RequestParser` (head 16 KiB, body `maxRequestBodySize`), handed to the same handler as HTTP/2 requests.
    /// Off by default: APNs-compatible listeners speak HTTP/2 only.
    public var servesHTTP11 = false
    /// Event-loop threads. One socket accepts (on the first loop) and deals connections to the loops in turn.
    public var workers: Int = 1
    /// SETTINGS advertised at the start of every connection.
    public var settings = HTTP2Settings()
    /// A connection without any frame for this long gets a GOAWAY and is closed (`nil`: never).
    public var idleTimeout: Duration? = .seconds(3600)
    /// A connection that has not completed TLS (and, for h2c, sent its preface) within this long is closed:
    /// slow or silent clients cannot hold connections open.
    public var handshakeTimeout: Duration = .seconds(10)
    /// GOAWAY debug data on idle timeout (APNs sends `{"reason":"IdleTimeout"}`).
    public var idleGoAwayDebugData: [UInt8] = []
    /// GOAWAY debug data on graceful shutdown (APNs sends `{"reason":"Shutdown"}`).
    public var shutdownGoAwayDebugData: [UInt8] = []
    /// Request bodies are buffered up to this size; the rest is counted and dropped (`bodyTruncated`).
    public var maxRequestBodySize: Int = 65536
    /// Which rapid-reset (CVE-2023-44487) protection runs.
    public enum ResetProtection: Sendable, Equatable {
        /// Rouse's guard (default): resets of streams already answered in full are free once per stream, every
        /// other reset is charged to the token bucket below. Lets libcurl 7.88 keep its connection.
        case rouse
        /// nghttp2's built-in limiter: every RST_STREAM is charged (burst 1000, 33/s).
        case nghttp2
    }
    /// Rapid-reset protection in force (see `RapidResetGuard`).
    public var resetProtection = ResetProtection.rouse
    /// Rapid-reset token bucket of the `.rouse` guard (nghttp2's defaults).
    public var streamResetBurst: UInt64 = 1000
    public var streamResetRate: UInt64 = 33
    /// Listen backlog.
    public var backlog: Int32 = 4096
    /// File mode of a Unix-domain listening socket (`unix:/path`): who may connect is who may write it.
    public var unixSocketMode: mode_t = 0o600

    // MARK: budgets (every peer is assumed hostile; each limit hit is counted in `HTTP2Server.limitCounts`)

    /// Open connections at most, over all workers; more are closed at accept.
    public var maxConnections: Int = 20_000
    /// Open connections at most from one source address; more are closed at accept.
    public var maxConnectionsPerAddress: Int = 1000
    /// Bytes of request headers and bodies buffered by streams not yet handed to the application, per connection.
    /// A stream that would take more is reset with REFUSED_STREAM. Flow control follows the same rule: a request's
    /// body is acknowledged with WINDOW_UPDATE only once the application took it (or it was dropped), so a peer
    /// cannot push more than the windows allow in the meantime.
    public var maxBufferedRequestBytes: Int = 1 << 20
    /// The same bytes over every connection of the server: many connections each within their own budget must not
    /// add up to gigabytes. A stream that would take more is reset with REFUSED_STREAM, counted in
    /// `HTTP2ServerLimitCounts.streamsRefusedListenerBuffer`.
    public var maxListenerBufferedRequestBytes: Int = 64 << 20
    /// A request must end (END_STREAM) within this long after its HEADERS, or its stream is reset (CANCEL):
    /// half-open streams cannot hold memory or keep a connection from its idle limit. `nil`: no deadline.
    public var requestTimeout: Duration? = .seconds(10)
    /// A connection must be marked authenticated (`HTTP2Connection.markAuthenticated()`: a valid token, a device
    /// credential) within this long of being accepted, or it gets GOAWAY and is closed: activity (PINGs, requests
    /// that fail authentication, a stream whose response the peer never lets through) does not extend it, so
    /// strangers cannot hold connection slots. `nil`: no deadline.
    public var authenticationTimeout: Duration?
    /// When accepting fails for lack of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), the listener stops
    /// polling for this long instead of spinning on a socket that stays readable.
    public var acceptPause: Duration = .milliseconds(100)

    public init() {}
}
