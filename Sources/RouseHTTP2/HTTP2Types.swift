/// One HTTP/2 header field (lowercase name).
public struct HTTP2Header: Sendable, Equatable {
    public var name: String
    public var value: String
    /// Never put in the HPACK dynamic table (APNs asks this for `:path` and `authorization`).
    public var neverIndex: Bool

    public init(_ name: String, _ value: String, neverIndex: Bool = false) {
        self.name = name
        self.value = value
        self.neverIndex = neverIndex
    }
}

/// An HTTP/2 error code (RFC 9113 §7). Open: unknown codes survive verbatim.
public struct HTTP2ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let noError = HTTP2ErrorCode(rawValue: 0x0)
    public static let protocolError = HTTP2ErrorCode(rawValue: 0x1)
    public static let internalError = HTTP2ErrorCode(rawValue: 0x2)
    public static let flowControlError = HTTP2ErrorCode(rawValue: 0x3)
    public static let settingsTimeout = HTTP2ErrorCode(rawValue: 0x4)
    public static let streamClosed = HTTP2ErrorCode(rawValue: 0x5)
    public static let frameSizeError = HTTP2ErrorCode(rawValue: 0x6)
    public static let refusedStream = HTTP2ErrorCode(rawValue: 0x7)
    public static let cancel = HTTP2ErrorCode(rawValue: 0x8)
    public static let compressionError = HTTP2ErrorCode(rawValue: 0x9)
    public static let connectError = HTTP2ErrorCode(rawValue: 0xa)
    public static let enhanceYourCalm = HTTP2ErrorCode(rawValue: 0xb)
    public static let inadequateSecurity = HTTP2ErrorCode(rawValue: 0xc)
    public static let http11Required = HTTP2ErrorCode(rawValue: 0xd)

    public var description: String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
            "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        return rawValue < names.count ? names[Int(rawValue)] : "0x\(String(rawValue, radix: 16))"
    }
}

/// The SETTINGS a server advertises. Defaults are what APNs is seen to send.
public struct HTTP2Settings: Sendable, Equatable {
    public var maxConcurrentStreams: UInt32 = 1000
    public var headerTableSize: UInt32 = 4096
    public var maxHeaderListSize: UInt32 = 8000
    public var initialWindowSize: UInt32 = 65535
    public var maxFrameSize: UInt32 = 16384

    public init() {}
}

/// A complete request as the server received it.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    public var scheme: String
    public var authority: String
    /// Regular (non-pseudo) headers in wire order.
    public var headers: [HTTP2Header]
    /// Pseudo-headers that appeared more than once or unknown pseudo-headers (a malformed request).
    public var duplicatePseudoHeaders: [String]
    public var body: [UInt8]
    /// More body arrived than the server's `maxRequestBodySize`; `body` holds only the first part.
    public var bodyTruncated: Bool
    /// Total body bytes received (including what was dropped).
    public var bodyLength: Int
    public var trailers: [HTTP2Header]
    public var streamID: Int32

    /// The first value of a header (name lowercase).
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// Facts about one accepted connection.
public struct HTTP2ConnectionInfo: Sendable {
    /// Unique per server.
    public var id: UInt64
    public var remoteAddress: String
    public var localAddress: String
    /// Negotiated TLS version, `nil` for h2c.
    public var tlsVersion: String?
    /// The client certificate, if one was presented.
    public var peerCertificate: PeerCertificate?
}
