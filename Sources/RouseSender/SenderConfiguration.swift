import RouseAPNs

/// How a sender proves who it is to APNs.
public enum SenderCredentials: Sendable {
    /// Token auth: an ES256 `.p8` key (PEM text), its key ID and the team ID.
    case token(keyPEM: String, keyID: String, teamID: String)
    /// Certificate auth with PEM files: certificate (optionally followed by its chain) and private key.
    case certificatePEM(certificateFile: String, keyFile: String)
    /// Certificate auth with a PKCS#12 bundle and its password.
    case pkcs12(file: String, password: String)
}

/// Which HTTP/2 implementation carries the pushes.
public enum SenderTransport: Sendable, Hashable {
    /// Rouse's own nghttp2 client: sees GOAWAY, REFUSED_STREAM, SETTINGS; sends PINGs. The default.
    case native
    /// libcurl's multi interface, for networks where only a proxy reaches APNs. `proxy` nil uses libcurl's
    /// defaults (`https_proxy`, `no_proxy` …); "" disables proxies.
    case curl(proxy: String?)
}

/// Where pushes go.
public struct SenderEndpoint: Sendable, Hashable {
    /// Host name or address.
    public var host: String
    /// Port (443, or 2197 through firewalls).
    public var port: UInt16
    /// The environment the endpoint answers for (for logs and the certificate check).
    public var environment: APNsEnvironment?

    /// An endpoint.
    public init(host: String, port: UInt16 = 443, environment: APNsEnvironment? = nil) {
        self.host = host
        self.port = port
        self.environment = environment
    }

    /// Apple's endpoint for `environment`.
    public static func apple(_ environment: APNsEnvironment) -> SenderEndpoint {
        SenderEndpoint(host: environment.host, port: 443, environment: environment)
    }

    /// Parses `sandbox`, `production`, or a URL such as `https://127.0.0.1:2197`.
    public static func parse(_ text: String) -> SenderEndpoint? {
        if let environment = APNsEnvironment(rawValue: text) { return .apple(environment) }
        var rest = Substring(text)
        guard rest.hasPrefix("https://") else { return nil }
        rest = rest.dropFirst("https://".count)
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        var host = rest
        var port: UInt16 = 443
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = UInt16(after.dropFirst()) else { return nil }
                port = p
            } else if !after.isEmpty {
                return nil
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            guard let p = UInt16(rest[rest.index(after: colon)...]) else { return nil }
            port = p
        }
        guard !host.isEmpty else { return nil }
        return SenderEndpoint(host: String(host), port: port)
    }

    /// `https://host:port`.
    public var url: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "https://\(h):\(port)"
    }
}

/// Everything an `APNsSender` needs.
public struct APNsSenderConfiguration: Sendable {
    /// Where to send.
    public var endpoint: SenderEndpoint
    /// Token or certificate.
    public var credentials: SenderCredentials
    /// Native (default) or curl.
    public var transport: SenderTransport = .native
    /// CA bundle to verify the server (nil: the system store).
    public var trustRootsFile: String?
    /// Connections to keep open while there is work.
    public var connections = 1
    /// Deadline of a push from submission to outcome, unless the caller gives one.
    public var defaultDeadline: Duration = .seconds(30)
    /// Connect deadline (TCP, TLS, the server's SETTINGS).
    public var connectTimeout: Duration = .seconds(10)
    /// Pool rules: retries, token refresh, PINGs.
    public var pool = PoolSettings()
    /// How often deadlines, backoffs and PINGs are checked.
    public var tickInterval: Duration = .milliseconds(100)

    /// A configuration.
    public init(endpoint: SenderEndpoint, credentials: SenderCredentials) {
        self.endpoint = endpoint
        self.credentials = credentials
    }
}
