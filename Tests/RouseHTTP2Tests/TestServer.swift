import RouseClock
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
    tls: Bool = true, clock: any RouseClock = SystemClock(),
    configure: (inout HTTP2ServerConfiguration) -> Void = { _ in },
    handler: @escaping @Sendable (HTTP2Request, HTTP2Stream) -> Void
) throws -> HTTP2Server {
    var c = HTTP2ServerConfiguration()
    c.listenAddress = "127.0.0.1:0"
    if tls {
        c.tls = .server(
            certificateChainFile: Repository.cert("server.pem"), privateKeyFile: Repository.cert("server.key"))
    }
    configure(&c)
    return try HTTP2Server(configuration: c, clock: clock) { _, _ in ClosureHandler(handler) }
}

extension RawH2Client {
    /// The frames the server sends until it answers two PINGs in turn: the second is read on a later pass of the
    /// server's loop than the first, so whatever the timers of the first pass (after a manual clock's advance) sent
    /// is among them. The PINGs are traffic: they count as activity for the idle timeout.
    func framesUntilSettled() throws -> [Frame] {
        var frames: [Frame] = []
        for round in UInt8(1)...2 {
            let opaque = [UInt8](repeating: round, count: 8)
            try send(RawH2Client.frame(type: 6, payload: opaque))
            while let frame = try readFrame() {
                if frame.type == 6 && frame.flags & 0x1 != 0 && frame.payload == opaque { break }
                frames.append(frame)
            }
        }
        return frames
    }
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
