/// Everything an `HTTP2Server` needs to know before it starts.
public struct HTTP2ServerConfiguration: Sendable {
    /// Where to listen (`127.0.0.1:2197`, `[::1]:0`, …). Port 0 picks a free port.
    public var listenAddress: String = "127.0.0.1:0"
    /// TLS (with ALPN h2). `nil` serves h2c with prior knowledge, for debugging.
    public var tls: TLSConfiguration?
    /// Event-loop threads; each accepts on its own SO_REUSEPORT socket.
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

    public init() {}
}
