import Logging
import RouseAPNs
import RouseClock
import RouseHTTP2
import RouseSystem

/// The mock APNs on the HTTP/2 kernel: TLS (optionally asking for provider certificates), the engine's decision
/// carried out per stream, and an optional admin endpoint (h2c) for inspection and faults.
public final class MockAPNsServer: Sendable {
    /// Where and how to serve.
    public struct Options: Sendable {
        /// Provider endpoint, e.g. `127.0.0.1:2197` (port 0: any free port).
        public var listenAddress = "127.0.0.1:0"
        /// Server certificate chain and key (PEM); `nil` serves h2c (debugging only: APNs is TLS-only).
        public var certificateChainFile: String?
        public var privateKeyFile: String?
        /// CA that provider client certificates are verified against; enables certificate connections.
        public var clientCAFile: String?
        /// Admin endpoint (h2c), e.g. `127.0.0.1:2198`; `nil`: none.
        public var adminAddress: String?
        /// Event-loop threads.
        public var workers = 1
        /// Idle connections are closed with GOAWAY `{"reason":"IdleTimeout"}` after this long.
        public var idleTimeout: Duration = .seconds(3600)

        public init() {}
    }

    /// The engine: records, faults, registries.
    public let mock: MockAPNs
    private let server: HTTP2Server
    private let admin: HTTP2Server?

    /// The provider endpoint's address (with the real port).
    public var address: String { server.localAddress.description }
    /// The provider endpoint's port.
    public var port: UInt16 { server.localAddress.port }
    /// The admin endpoint's address, if any.
    public var adminAddress: String? { admin?.localAddress.description }

    /// Starts serving `mock`; `clock` dates the requests (token age) and runs the connections' timers.
    public init(
        mock: MockAPNs, options: Options, logger: Logger = Logger(label: "rouse.mock-apns"),
        clock: any RouseClock = SystemClock()
    ) throws {
        self.mock = mock
        var configuration = HTTP2ServerConfiguration()
        configuration.listenAddress = options.listenAddress
        configuration.workers = options.workers
        configuration.settings.maxConcurrentStreams = UInt32(mock.maxConcurrentStreams)
        configuration.idleTimeout = options.idleTimeout
        configuration.idleGoAwayDebugData = APNsErrorBody(reason: .idleTimeout).bytes
        configuration.shutdownGoAwayDebugData = APNsErrorBody(reason: .shutdown).bytes
        // APNs payloads are at most 5120 bytes; keep a margin so PayloadTooLarge is decided on the real length.
        configuration.maxRequestBodySize = 16384
        if let chain = options.certificateChainFile, let key = options.privateKeyFile {
            var tls = TLSConfiguration.server(certificateChainFile: chain, privateKeyFile: key)
            if let ca = options.clientCAFile {
                tls.clientCAFile = ca
                tls.clientAuthentication = .optional
            }
            configuration.tls = tls
        }
        server = try HTTP2Server(configuration: configuration, logger: logger, clock: clock) { info, connection in
            MockConnectionHandler(mock: mock, info: info, connection: connection, clock: clock)
        }
        if let adminAddress = options.adminAddress {
            var adminConfiguration = HTTP2ServerConfiguration()
            adminConfiguration.listenAddress = adminAddress
            adminConfiguration.idleTimeout = nil
            adminConfiguration.maxRequestBodySize = 1 << 20
            do {
                admin = try HTTP2Server(configuration: adminConfiguration, logger: logger, clock: clock) { _, _ in
                    MockAdminHandler(mock: mock)
                }
            } catch {
                await_shutdown(server)
                throw error
            }
        } else {
            admin = nil
        }
    }

    /// Stops both endpoints: GOAWAY `{"reason":"Shutdown"}`, drain, close.
    public func shutdown(gracePeriod: Duration = .seconds(5)) async {
        await server.shutdown(gracePeriod: gracePeriod)
        await admin?.shutdown(gracePeriod: .seconds(1))
    }
}

/// Stops a server that was started before a later setup step failed.
private func await_shutdown(_ server: HTTP2Server) {
    Task { await server.shutdown(gracePeriod: .zero) }
}

/// Per-connection glue: the engine's `MockConnection` state, and its decisions carried out on the kernel.
final class MockConnectionHandler: HTTP2ConnectionHandler {
    let mock: MockAPNs
    var state: MockConnection
    let connection: HTTP2Connection
    let clock: any RouseClock

    init(mock: MockAPNs, info: HTTP2ConnectionInfo, connection: HTTP2Connection, clock: any RouseClock) {
        self.mock = mock
        self.clock = clock
        self.connection = connection
        let certificate = info.peerCertificate.map { peer in
            ProviderCertificate.reading(
                subjectUID: peer.subjectUID, extensions: peer.extensions, verification: peer.verification.provider)
        }
        state = mock.openConnection(
            info: MockConnectionInfo(id: info.id, remoteAddress: info.remoteAddress, certificate: certificate))
        if state.advertisedMaxConcurrentStreams != mock.maxConcurrentStreams {
            connection.setMaxConcurrentStreams(UInt32(state.advertisedMaxConcurrentStreams))
        }
    }

    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
        let mockRequest = MockRequest(
            method: request.method, path: request.path, headers: request.headers.map { ($0.name, $0.value) },
            body: request.body, bodyLength: request.bodyLength,
            duplicatePseudoHeaders: !request.duplicatePseudoHeaders.isEmpty, streamID: request.streamID)
        let decision = mock.handle(mockRequest, connection: &state, now: APNsTime(milliseconds: clock.wallMilliseconds))
        if let limit = decision.advertiseMaxConcurrentStreams {
            connection.setMaxConcurrentStreams(UInt32(limit))
        }
        switch decision.action {
        case .respond(let response):
            let after = decision.goAwayAfterResponse
            if response.delayMilliseconds > 0 {
                let connection = self.connection
                connection.schedule(after: .milliseconds(response.delayMilliseconds)) {
                    Self.send(response, goAwayAfter: after, stream: stream, connection: connection)
                }
            } else {
                Self.send(response, goAwayAfter: after, stream: stream, connection: connection)
            }
        case .goAway(let code, let lastStreamID, let debugData):
            connection.goAway(code: HTTP2ErrorCode(rawValue: code), lastStreamID: lastStreamID, debugData: debugData)
        case .resetStream(let code):
            stream.reset(HTTP2ErrorCode(rawValue: code))
        case .resetConnection:
            connection.resetTCP()
        case .blackhole:
            connection.blackhole()
        }
    }

    func connectionClosed() {}

    /// Whether a response header's value is new on every response (`apns-id`, `apns-unique-id`): such values go out
    /// as literals without indexing, since adding each to the HPACK table (nghttp2's deflater, then the client's
    /// inflater) only evicts entries that do repeat.
    private static func isUnique(_ name: String) -> Bool { name == "apns-id" || name == "apns-unique-id" }

    /// Sends a decided response, then the GOAWAY that follows it, if any.
    private static func send(
        _ response: MockResponse, goAwayAfter: MockGoAwayFrame?, stream: HTTP2Stream, connection: HTTP2Connection
    ) {
        stream.respond(
            status: response.status,
            headers: response.headers.map { HTTP2Header($0.name, $0.value, neverIndex: Self.isUnique($0.name)) },
            body: response.body)
        if let g = goAwayAfter {
            connection.goAway(
                code: HTTP2ErrorCode(rawValue: g.errorCode), lastStreamID: g.lastStreamID, debugData: g.debugData)
        }
    }
}

extension PeerCertificate.Verification {
    /// The kernel's TLS verdict in the APNs model's terms.
    var provider: ProviderCertificate.Verification {
        switch self {
        case .ok: return .ok
        case .expired: return .expired
        case .notYetValid: return .notYetValid
        case .unknownIssuer: return .unknownCA
        case .other(_, let message): return .failed(message)
        }
    }
}
