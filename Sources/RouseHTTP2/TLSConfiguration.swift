/// How a server or client sets up TLS.
public struct TLSConfiguration: Sendable {
    /// Whether and how a server asks for client certificates.
    public enum ClientAuthentication: Sendable, Equatable {
        /// No client certificate is requested.
        case none
        /// A certificate is requested and verified against `clientCAFile`; the handshake succeeds anyway and
        /// the outcome is handed to the application (so it can answer, for example, `403 BadCertificate`).
        case optional
        /// A valid certificate is required; the handshake fails without one.
        case required
    }

    /// PEM certificate chain (server: its certificate; client: the client certificate, if any).
    public var certificateChainFile: String?
    /// PEM private key for `certificateChainFile`.
    public var privateKeyFile: String?
    /// PKCS#12 bundle used instead of the PEM pair.
    public var pkcs12File: String?
    /// Password of `pkcs12File`.
    public var pkcs12Password: String?
    /// Server: CA bundle that client certificates are verified against.
    public var clientCAFile: String?
    /// Server: client-certificate policy.
    public var clientAuthentication: ClientAuthentication = .none
    /// Client: CA bundle the server is verified against (`nil`: the system store).
    public var trustRootsFile: String?
    /// Client: verify the server's certificate and name (on by default).
    public var verifyPeer: Bool = true
    /// Client: the name sent in SNI and checked against the certificate (defaults to the host).
    public var serverName: String?

    /// Server: ALPN may select `http/1.1` for a client that does not offer `h2` (set by `HTTP2Server` from
    /// `HTTP2ServerConfiguration.servesHTTP11`).
    public var offersHTTP11 = false

    public init() {}

    /// A server configuration from a PEM certificate chain and key.
    public static func server(certificateChainFile: String, privateKeyFile: String) -> TLSConfiguration {
        var c = TLSConfiguration()
        c.certificateChainFile = certificateChainFile
        c.privateKeyFile = privateKeyFile
        return c
    }
}
