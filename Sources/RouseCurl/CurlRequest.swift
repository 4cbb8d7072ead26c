/// One HTTP request for ``CurlHTTPClient``: what to send, the deadlines, and how to reach the server.
package struct CurlRequest: Sendable {
    /// HTTP method, e.g. `GET`, `POST`.
    package var method: String
    /// Absolute URL (`https://…` or `http://…`).
    package var url: String
    /// Request headers in order. libcurl's own defaults (`Accept`, `Content-Type` for bodies, `Expect`) are
    /// suppressed: what is listed here is what is sent.
    package var headers: [(name: String, value: String)]
    /// Request body; sent when non-empty or when the method is not `GET`/`HEAD`.
    package var body: [UInt8]
    /// Deadline for name resolution, TCP, proxy and TLS handshakes (`CURLOPT_CONNECTTIMEOUT_MS`).
    package var connectTimeout: Duration
    /// Deadline for the whole transfer, connect included (`CURLOPT_TIMEOUT_MS`). Streams use it as their
    /// maximum lifetime.
    package var timeout: Duration
    /// Which HTTP version to speak.
    package var httpVersion: CurlHTTPVersionPreference
    /// Server verification and client certificate.
    package var tls: CurlTLSOptions
    /// Proxy settings; nil leaves libcurl's defaults, which read `https_proxy`, `http_proxy`, `all_proxy`
    /// and `no_proxy` from the environment.
    package var proxy: CurlProxyOptions?
    /// Buffered responses larger than this fail with `CURLE_WRITE_ERROR` (streams are not limited).
    package var maxResponseBodyBytes: Int
    /// TCP keepalive probes after this much idle time, then at this interval (`CURLOPT_TCP_KEEPALIVE`,
    /// `CURLOPT_TCP_KEEPIDLE`, `CURLOPT_TCP_KEEPINTVL`); nil leaves them off. For long-lived streams:
    /// libcurl 7.88 cannot send HTTP/2 PINGs on multi-interface connections (`curl_easy_upkeep` only serves
    /// handles run by `curl_easy_perform`), so TCP keepalive is the only liveness probe available here.
    package var tcpKeepAlive: Duration?
    /// An upload whose body a ``CurlBodySink`` reads (``CurlHTTPClient/send(_:sink:)``); `body` must be empty.
    package var upload: CurlUpload?
    /// Fail when slower than this for a while (long downloads); nil: only ``timeout`` bounds the transfer.
    package var lowSpeed: CurlLowSpeed?
    /// Redirects followed (`CURLOPT_FOLLOWLOCATION`, to http and https only); 0: none, a 3xx is the response.
    package var maxRedirects = 0
    /// Connect only to public addresses: every address libcurl is about to connect to (after resolution, for each
    /// connection, redirects included) is checked, and loopback, link-local, private, unique-local, multicast and
    /// unspecified ones are refused (`CURLE_COULDNT_CONNECT`, errno `EACCES`). Such a request never reuses a
    /// connection, nor leaves one for reuse (it could lead elsewhere than its own check allowed).
    package var publicDestinationsOnly = false

    /// A request with the common defaults: 10 s to connect, 30 s in total, HTTP/2 over TLS, peer and host
    /// verification on, at most 16 MiB of response body.
    package init(
        method: String = "GET",
        url: String,
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = [],
        connectTimeout: Duration = .seconds(10),
        timeout: Duration = .seconds(30),
        httpVersion: CurlHTTPVersionPreference = .http2TLS,
        tls: CurlTLSOptions = CurlTLSOptions(),
        proxy: CurlProxyOptions? = nil,
        maxResponseBodyBytes: Int = 16 << 20,
        tcpKeepAlive: Duration? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.httpVersion = httpVersion
        self.tls = tls
        self.proxy = proxy
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.tcpKeepAlive = tcpKeepAlive
    }
}

/// The HTTP version a request asks libcurl for (`CURLOPT_HTTP_VERSION`).
package enum CurlHTTPVersionPreference: Sendable, Hashable {
    /// HTTP/2 over TLS (ALPN `h2`), HTTP/1.1 for cleartext URLs (`CURL_HTTP_VERSION_2TLS`).
    case http2TLS
    /// HTTP/2 without negotiation, also over cleartext: h2c prior knowledge
    /// (`CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE`).
    case http2PriorKnowledge
    /// HTTP/1.1 only (`CURL_HTTP_VERSION_1_1`).
    case http1_1
}

/// TLS settings of one request. libcurl keys connection reuse on them, so requests with different client
/// certificates never share a connection.
package struct CurlTLSOptions: Sendable {
    /// A client certificate with its private key.
    package enum ClientCertificate: Sendable {
        /// PEM files: certificate (optionally followed by its chain) and private key; `keyPassword` for an
        /// encrypted key.
        case pem(certificateFile: String, keyFile: String, keyPassword: String? = nil)
        /// A PKCS#12 bundle holding certificate and key, with its password.
        case pkcs12(file: String, password: String)
        /// PEM certificate and key held in memory (credentials from the environment or a secret store).
        case pemData(certificate: [UInt8], key: [UInt8], keyPassword: String? = nil)
        /// A PKCS#12 bundle held in memory, with its password.
        case pkcs12Data([UInt8], password: String)
    }

    /// CA bundle used to verify the server (`CURLOPT_CAINFO`); nil uses the system store.
    package var caFile: String?
    /// PEM CA certificates held in memory (`CURLOPT_CAINFO_BLOB`), used instead of `caFile` when set.
    package var caPEM: [UInt8]?
    /// Client certificate for mutual TLS (APNs certificate auth).
    package var clientCertificate: ClientCertificate?
    /// Verify the server certificate chain (`CURLOPT_SSL_VERIFYPEER`).
    package var verifyPeer: Bool
    /// Verify that the certificate names the host (`CURLOPT_SSL_VERIFYHOST`).
    package var verifyHost: Bool

    /// TLS options; verification is on unless switched off.
    package init(
        caFile: String? = nil,
        caPEM: [UInt8]? = nil,
        clientCertificate: ClientCertificate? = nil,
        verifyPeer: Bool = true,
        verifyHost: Bool = true
    ) {
        self.caFile = caFile
        self.caPEM = caPEM
        self.clientCertificate = clientCertificate
        self.verifyPeer = verifyPeer
        self.verifyHost = verifyHost
    }
}

/// Proxy settings of one request (libcurl's `CURLOPT_PROXY*` family).
package struct CurlProxyOptions: Sendable {
    /// Proxy URL with scheme: `http://`, `https://`, `socks5h://` …; "" disables proxies, environment included.
    package var url: String
    /// Hosts that bypass the proxy, comma separated (`CURLOPT_NOPROXY`); nil keeps `no_proxy`.
    package var noProxy: String?
    /// Proxy user name and password (`CURLOPT_PROXYUSERNAME`, `CURLOPT_PROXYPASSWORD`).
    package var credentials: (user: String, password: String)?
    /// Always tunnel through `CONNECT` (`CURLOPT_HTTPPROXYTUNNEL`); HTTPS URLs tunnel anyway.
    package var tunnel: Bool
    /// CA bundle for an HTTPS proxy (`CURLOPT_PROXY_CAINFO`).
    package var caFile: String?
    /// Verify an HTTPS proxy's certificate and name.
    package var verify: Bool

    /// Proxy settings; tunnelling and verification on.
    package init(
        url: String,
        noProxy: String? = nil,
        credentials: (user: String, password: String)? = nil,
        tunnel: Bool = true,
        caFile: String? = nil,
        verify: Bool = true
    ) {
        self.url = url
        self.noProxy = noProxy
        self.credentials = credentials
        self.tunnel = tunnel
        self.caFile = caFile
        self.verify = verify
    }
}
