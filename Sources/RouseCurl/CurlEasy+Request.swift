import CCurl

extension CurlEasy {
    /// Sets every option `request` implies, after checking it can be expressed. Throws before anything is
    /// sent when it cannot.
    func apply(_ request: CurlRequest) throws {
        try Self.validate(request)
        try set(CURLOPT_URL, request.url, name: "CURLOPT_URL")
        try set(CURLOPT_PROTOCOLS_STR, "http,https", name: "CURLOPT_PROTOCOLS_STR")
        try set(CURLOPT_NOSIGNAL, 1, name: "CURLOPT_NOSIGNAL")
        if request.publicDestinationsOnly {
            try publicSocketsOnly()
            try set(CURLOPT_FRESH_CONNECT, 1, name: "CURLOPT_FRESH_CONNECT")
            try set(CURLOPT_FORBID_REUSE, 1, name: "CURLOPT_FORBID_REUSE")
        } else {
            try closeOnExec()
        }
        try set(CURLOPT_PIPEWAIT, 1, name: "CURLOPT_PIPEWAIT")
        try set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1, name: "CURLOPT_SUPPRESS_CONNECT_HEADERS")
        try set(CURLOPT_HTTP_VERSION, Self.curlVersion(request.httpVersion), name: "CURLOPT_HTTP_VERSION")
        try set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout), name: "CURLOPT_CONNECTTIMEOUT_MS")
        try set(CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout), name: "CURLOPT_TIMEOUT_MS")
        if let keepAlive = request.tcpKeepAlive {
            let seconds = max(1, Int((Self.milliseconds(keepAlive) + 999) / 1000))
            try set(CURLOPT_TCP_KEEPALIVE, 1, name: "CURLOPT_TCP_KEEPALIVE")
            try set(CURLOPT_TCP_KEEPIDLE, seconds, name: "CURLOPT_TCP_KEEPIDLE")
            try set(CURLOPT_TCP_KEEPINTVL, seconds, name: "CURLOPT_TCP_KEEPINTVL")
        }
        if let lowSpeed = request.lowSpeed {
            let seconds = max(1, Int((Self.milliseconds(lowSpeed.duration) + 999) / 1000))
            try set(CURLOPT_LOW_SPEED_LIMIT, max(1, lowSpeed.bytesPerSecond), name: "CURLOPT_LOW_SPEED_LIMIT")
            try set(CURLOPT_LOW_SPEED_TIME, seconds, name: "CURLOPT_LOW_SPEED_TIME")
        }
        if request.maxRedirects > 0 {
            try set(CURLOPT_FOLLOWLOCATION, 1, name: "CURLOPT_FOLLOWLOCATION")
            try set(CURLOPT_MAXREDIRS, request.maxRedirects, name: "CURLOPT_MAXREDIRS")
            try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https", name: "CURLOPT_REDIR_PROTOCOLS_STR")
        }
        if let upload = request.upload {
            try applyUpload(request, upload)
        } else {
            try applyMethodAndBody(request)
        }
        try setHeaders(Self.headerLines(request.headers))
        try applyTLS(request.tls)
        if let proxy = request.proxy {
            try applyProxy(proxy)
        }
    }

    private func applyMethodAndBody(_ request: CurlRequest) throws {
        switch request.method {
        case "GET" where request.body.isEmpty:
            try set(CURLOPT_HTTPGET, 1, name: "CURLOPT_HTTPGET")
        case "HEAD" where request.body.isEmpty:
            try set(CURLOPT_NOBODY, 1, name: "CURLOPT_NOBODY")
        default:
            // POSTFIELDSIZE first, then COPYPOSTFIELDS copies exactly that many bytes.
            try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(request.body.count), name: "CURLOPT_POSTFIELDSIZE_LARGE")
            if request.body.isEmpty {
                try set(CURLOPT_COPYPOSTFIELDS, "", name: "CURLOPT_COPYPOSTFIELDS")
            } else {
                try request.body.withUnsafeBytes { bytes in
                    try setPointer(CURLOPT_COPYPOSTFIELDS, bytes.baseAddress, name: "CURLOPT_COPYPOSTFIELDS")
                }
            }
            if request.method != "POST" {
                try set(CURLOPT_CUSTOMREQUEST, request.method, name: "CURLOPT_CUSTOMREQUEST")
            }
        }
    }

    /// A body read by the transfer's sink (`CURLOPT_READFUNCTION`, set by ``CurlTransfer``): `PUT` as an upload,
    /// other methods as a `POST` of that size with the method's name.
    private func applyUpload(_ request: CurlRequest, _ upload: CurlUpload) throws {
        guard request.body.isEmpty, upload.size >= 0 else {
            throw CurlError.invalidRequest("an upload has no in-memory body and a size of at least 0")
        }
        if request.method == "PUT" {
            try set(CURLOPT_UPLOAD, 1, name: "CURLOPT_UPLOAD")
            try set(CURLOPT_INFILESIZE_LARGE, offset: upload.size, name: "CURLOPT_INFILESIZE_LARGE")
        } else {
            try set(CURLOPT_POST, 1, name: "CURLOPT_POST")
            try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: upload.size, name: "CURLOPT_POSTFIELDSIZE_LARGE")
            if request.method != "POST" {
                try set(CURLOPT_CUSTOMREQUEST, request.method, name: "CURLOPT_CUSTOMREQUEST")
            }
        }
    }

    private func applyTLS(_ tls: CurlTLSOptions) throws {
        if let caPEM = tls.caPEM {
            try set(CURLOPT_CAINFO_BLOB, blob: caPEM, name: "CURLOPT_CAINFO_BLOB")
        } else if let caFile = tls.caFile {
            try set(CURLOPT_CAINFO, caFile, name: "CURLOPT_CAINFO")
        }
        try set(CURLOPT_SSL_VERIFYPEER, tls.verifyPeer ? 1 : 0, name: "CURLOPT_SSL_VERIFYPEER")
        try set(CURLOPT_SSL_VERIFYHOST, tls.verifyHost ? 2 : 0, name: "CURLOPT_SSL_VERIFYHOST")
        switch tls.clientCertificate {
        case nil:
            break
        case .pem(let certificateFile, let keyFile, let keyPassword):
            try set(CURLOPT_SSLCERT, certificateFile, name: "CURLOPT_SSLCERT")
            try set(CURLOPT_SSLCERTTYPE, "PEM", name: "CURLOPT_SSLCERTTYPE")
            try set(CURLOPT_SSLKEY, keyFile, name: "CURLOPT_SSLKEY")
            try set(CURLOPT_SSLKEYTYPE, "PEM", name: "CURLOPT_SSLKEYTYPE")
            if let keyPassword {
                try set(CURLOPT_KEYPASSWD, keyPassword, name: "CURLOPT_KEYPASSWD")
            }
        case .pkcs12(let file, let password):
            try set(CURLOPT_SSLCERT, file, name: "CURLOPT_SSLCERT")
            try set(CURLOPT_SSLCERTTYPE, "P12", name: "CURLOPT_SSLCERTTYPE")
            try set(CURLOPT_KEYPASSWD, password, name: "CURLOPT_KEYPASSWD")
        case .pemData(let certificate, let key, let keyPassword):
            try set(CURLOPT_SSLCERT_BLOB, blob: certificate, name: "CURLOPT_SSLCERT_BLOB")
            try set(CURLOPT_SSLCERTTYPE, "PEM", name: "CURLOPT_SSLCERTTYPE")
            try set(CURLOPT_SSLKEY_BLOB, blob: key, name: "CURLOPT_SSLKEY_BLOB")
            try set(CURLOPT_SSLKEYTYPE, "PEM", name: "CURLOPT_SSLKEYTYPE")
            if let keyPassword {
                try set(CURLOPT_KEYPASSWD, keyPassword, name: "CURLOPT_KEYPASSWD")
            }
        case .pkcs12Data(let bytes, let password):
            try set(CURLOPT_SSLCERT_BLOB, blob: bytes, name: "CURLOPT_SSLCERT_BLOB")
            try set(CURLOPT_SSLCERTTYPE, "P12", name: "CURLOPT_SSLCERTTYPE")
            try set(CURLOPT_KEYPASSWD, password, name: "CURLOPT_KEYPASSWD")
        }
    }

    private func applyProxy(_ proxy: CurlProxyOptions) throws {
        try set(CURLOPT_PROXY, proxy.url, name: "CURLOPT_PROXY")
        if let noProxy = proxy.noProxy {
            try set(CURLOPT_NOPROXY, noProxy, name: "CURLOPT_NOPROXY")
        }
        if let credentials = proxy.credentials {
            try set(CURLOPT_PROXYUSERNAME, credentials.user, name: "CURLOPT_PROXYUSERNAME")
            try set(CURLOPT_PROXYPASSWORD, credentials.password, name: "CURLOPT_PROXYPASSWORD")
        }
        try set(CURLOPT_HTTPPROXYTUNNEL, proxy.tunnel ? 1 : 0, name: "CURLOPT_HTTPPROXYTUNNEL")
        if let caFile = proxy.caFile {
            try set(CURLOPT_PROXY_CAINFO, caFile, name: "CURLOPT_PROXY_CAINFO")
        }
        try set(CURLOPT_PROXY_SSL_VERIFYPEER, proxy.verify ? 1 : 0, name: "CURLOPT_PROXY_SSL_VERIFYPEER")
        try set(CURLOPT_PROXY_SSL_VERIFYHOST, proxy.verify ? 2 : 0, name: "CURLOPT_PROXY_SSL_VERIFYHOST")
    }

    static func validate(_ request: CurlRequest) throws {
        func clean(_ text: String) -> Bool {
            !text.utf8.contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D }
        }
        guard !request.method.isEmpty, request.method.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw CurlError.invalidRequest("method must be a non-empty token")
        }
        guard clean(request.url), !request.url.isEmpty else {
            throw CurlError.invalidRequest("URL is empty or contains CR, LF or NUL")
        }
        for header in request.headers {
            guard !header.name.isEmpty, clean(header.name), clean(header.value),
                !header.name.utf8.contains(where: { $0 == 0x3A || $0 == 0x20 || $0 == 0x3B })
            else {
                throw CurlError.invalidRequest("header name or value is empty or contains CR, LF, NUL, ':', ' ' or ';'")
            }
        }
        guard request.connectTimeout > .zero, request.timeout > .zero else {
            throw CurlError.invalidRequest("timeouts must be positive")
        }
        if let keepAlive = request.tcpKeepAlive, keepAlive <= .zero {
            throw CurlError.invalidRequest("tcpKeepAlive must be positive")
        }
        guard request.maxResponseBodyBytes >= 0 else {
            throw CurlError.invalidRequest("maxResponseBodyBytes must not be negative")
        }
    }

    /// Header lines in libcurl's syntax, plus blanks that remove libcurl's default headers the caller did
    /// not set ("Name:" removes, "Name;" sends an empty value).
    static func headerLines(_ headers: [(name: String, value: String)]) -> [String] {
        var lines = headers.map { $0.value.isEmpty ? "\($0.name);" : "\($0.name): \($0.value)" }
        let names = Set(headers.map { $0.name.lowercased() })
        for suppressed in ["Accept", "Content-Type", "Expect"] where !names.contains(suppressed.lowercased()) {
            lines.append("\(suppressed):")
        }
        return lines
    }

    /// libcurl takes milliseconds and reads 0 as "no deadline": round up and never pass 0.
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds < 1_000_000_000 else { return 1_000_000_000_000 }
        let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(max(1, millis))
    }

    static func curlVersion(_ preference: CurlHTTPVersionPreference) -> Int {
        switch preference {
        case .http2TLS: CURL_HTTP_VERSION_2TLS
        case .http2PriorKnowledge: CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
        case .http1_1: CURL_HTTP_VERSION_1_1
        }
    }
}
