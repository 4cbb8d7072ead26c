import RouseHTTP2
import RouseSystem
import RouseTestSupport

/// A closure-backed connection handler for kernel tests.
final class ClosureHandler: HTTP2ConnectionHandler {
    let body: @Sendable (HTTP2Request, HTTP2Stream) -> Void
    init(_ body: @escaping @Sendable (HTTP2Request, HTTP2Stream) -> Void) { self.body = body }
    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) { body(request, stream) }
    func connectionClosed() {}
}

/// Starts a server on 127.0.0.1 with a free port, TLS from certs/ unless `tls` is false.
func makeServer(
    tls: Bool = true, configure: (inout HTTP2ServerConfiguration) -> Void = { _ in },
    handler: @escaping @Sendable (HTTP2Request, HTTP2Stream) -> Void
) throws -> HTTP2Server {
    var c = HTTP2ServerConfiguration()
    c.listenAddress = "127.0.0.1:0"
    if tls {
        c.tls = .server(
            certificateChainFile: Repository.cert("server.pem"), privateKeyFile: Repository.cert("server.key"))
    }
    configure(&c)
    return try HTTP2Server(configuration: c) { _, _ in ClosureHandler(handler) }
}

extension HTTP2Server {
    var port: UInt16 { localAddress.port }
    var httpsURL: String { "https://127.0.0.1:\(port)" }
    /// The URL whose host the test certificate names (clients that verify it, like curl).
    var localhostURL: String { "https://localhost:\(port)" }
}

let nghttp = "/usr/bin/nghttp"
let h2load = "/usr/bin/h2load"
let curlCLI = "/usr/bin/curl"

/// `nghttp -v` against the server, trusting the test CA.
func nghttpVerbose(_ url: String, extra: [String] = []) async throws -> String {
    let out = try await ChildProcess.run(nghttp, ["-v"] + extra + [url], timeout: .seconds(30))
    return out.stdout + out.stderr
}
