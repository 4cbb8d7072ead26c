/// The HTTP version a response came over (`CURLINFO_HTTP_VERSION`), kept open.
package struct CurlHTTPVersion: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// libcurl's numeric value (`CURL_HTTP_VERSION_*`).
    package let rawValue: Int

    /// Wraps libcurl's numeric value.
    package init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// Unknown (no response).
    package static let unknown = CurlHTTPVersion(rawValue: 0)
    /// HTTP/1.0.
    package static let http1_0 = CurlHTTPVersion(rawValue: 1)
    /// HTTP/1.1.
    package static let http1_1 = CurlHTTPVersion(rawValue: 2)
    /// HTTP/2.
    package static let http2 = CurlHTTPVersion(rawValue: 3)
    /// HTTP/3.
    package static let http3 = CurlHTTPVersion(rawValue: 30)

    /// "HTTP/2" and so on.
    package var description: String {
        switch self {
        case .http1_0: "HTTP/1.0"
        case .http1_1: "HTTP/1.1"
        case .http2: "HTTP/2"
        case .http3: "HTTP/3"
        default: "HTTP/?(\(rawValue))"
        }
    }
}

/// Which connection carried a transfer, so callers (and tests) can tell connections apart.
package struct CurlConnectionInfo: Sendable, Hashable {
    /// Connections libcurl opened for this transfer (`CURLINFO_NUM_CONNECTS`): 0 when it reused one.
    package var newConnections: Int
    /// Local port of the connection (`CURLINFO_LOCAL_PORT`); equal ports mean the same connection.
    package var localPort: Int
    /// Address of the server or proxy it connected to (`CURLINFO_PRIMARY_IP`).
    package var remoteAddress: String
    /// Port of the server or proxy (`CURLINFO_PRIMARY_PORT`).
    package var remotePort: Int

    /// Connection facts as libcurl reports them.
    package init(newConnections: Int, localPort: Int, remoteAddress: String, remotePort: Int) {
        self.newConnections = newConnections
        self.localPort = localPort
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
    }
}

/// Status line and headers of a response.
package struct CurlResponseHead: Sendable {
    /// HTTP status code.
    package var status: Int
    /// Response headers in the order received (names as sent; HTTP/2 sends them lower case).
    package var headers: [(name: String, value: String)]
    /// Protocol version of the response.
    package var httpVersion: CurlHTTPVersion
    /// The connection that carried it.
    package var connection: CurlConnectionInfo

    /// A response head; the client builds these, tests of code above the transport may too.
    package init(
        status: Int,
        headers: [(name: String, value: String)],
        httpVersion: CurlHTTPVersion,
        connection: CurlConnectionInfo
    ) {
        self.status = status
        self.headers = headers
        self.httpVersion = httpVersion
        self.connection = connection
    }

    /// The first value of header `name`, compared case-insensitively.
    package func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// A complete, buffered response.
package struct CurlResponse: Sendable {
    /// Status, headers, version and connection.
    package var head: CurlResponseHead
    /// The whole body.
    package var body: [UInt8]

    /// A buffered response; the client builds these, tests of code above the transport may too.
    package init(head: CurlResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }

    /// HTTP status code.
    package var status: Int { head.status }
    /// Response headers in order.
    package var headers: [(name: String, value: String)] { head.headers }
    /// Protocol version of the response.
    package var httpVersion: CurlHTTPVersion { head.httpVersion }
    /// The connection that carried it.
    package var connection: CurlConnectionInfo { head.connection }

    /// The first value of header `name`, compared case-insensitively.
    package func header(_ name: String) -> String? { head.header(name) }
}

/// A response whose body arrives as it is received: for long-lived streams such as the device channel.
package struct CurlStreamingResponse: Sendable {
    /// Status, headers, version and connection, known before any body byte.
    package let head: CurlResponseHead
    /// Body chunks as libcurl hands them over; finishes at the end of the stream or throws ``CurlError``.
    /// Ending the iteration early (or dropping the stream) cancels the transfer.
    package let body: AsyncThrowingStream<[UInt8], any Error>
}
