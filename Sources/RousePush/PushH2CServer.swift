import Logging
import RouseHTTP2
import RousePushCore

/// The API over h2c (HTTP/2 with prior knowledge, no TLS) on Rouse's own HTTP/2 server kernel, on TCP beside the
/// HTTP/1.1 listener and with the same bearer token: for clients that keep one multiplexed connection (the kernel's
/// budgets apply: connections, streams, buffered bytes, request deadline, rapid-reset guard). Not on the Unix socket:
/// the kernel's accept path does not expose the peer's credentials, and the Unix socket's peer check is not optional.
package final class PushH2CServer: Sendable {
    private let server: HTTP2Server

    /// Listens on `address` (`127.0.0.1:8090`; port 0 picks one).
    package init(
        address: String, bearerToken: String, handler: PushAPIHandler, maxBodyBytes: Int, maxConnections: Int,
        metrics: PushServiceMetrics, logger: Logger
    ) throws {
        var configuration = HTTP2ServerConfiguration()
        configuration.listenAddress = address
        configuration.tls = nil
        configuration.maxRequestBodySize = maxBodyBytes
        configuration.maxConnections = maxConnections
        configuration.idleTimeout = .seconds(300)
        server = try HTTP2Server(configuration: configuration, logger: logger) { _, _ in
            H2CHandler(handler: handler, bearer: bearerToken, maxBodyBytes: maxBodyBytes, metrics: metrics)
        }
    }

    /// The address it listens on (with the real port).
    package var address: String { "\(server.localAddress)" }

    /// Graceful shutdown (GOAWAY, open streams finish within `gracePeriod`).
    package func shutdown(gracePeriod: Duration) async {
        await server.shutdown(gracePeriod: gracePeriod)
    }
}

/// One h2c connection: each complete request goes to the shared API handler, its answer back on its stream.
final class H2CHandler: HTTP2ConnectionHandler {
    let handler: PushAPIHandler
    let bearer: String
    let maxBodyBytes: Int
    let metrics: PushServiceMetrics

    init(handler: PushAPIHandler, bearer: String, maxBodyBytes: Int, metrics: PushServiceMetrics) {
        self.handler = handler
        self.bearer = bearer
        self.maxBodyBytes = maxBodyBytes
        self.metrics = metrics
    }

    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
        let respond: @Sendable (PushAPIResponse) -> Void = { response in
            stream.respond(
                status: response.status, headers: response.headers.map { HTTP2Header($0.0, $0.1) }, body: response.body)
        }
        guard PushAPIAuth.bearerMatches(request.header("authorization"), bearer) else {
            metrics.limitHit(.auth)
            respond(
                .error(
                    401, request.header("authorization") == nil ? "missing bearer token" : "wrong bearer token",
                    headers: [("www-authenticate", "Bearer")]))
            return
        }
        if request.bodyTruncated {
            metrics.limitHit(.bodySize)
            respond(.error(413, "body of \(request.bodyLength) bytes exceeds \(maxBodyBytes)"))
            return
        }
        handler.handle(method: request.method, target: request.path, body: request.body, respond: respond)
    }

    func connectionClosed() {}
}

/// The bearer check of the TCP listeners, in constant time.
enum PushAPIAuth {
    static func bearerMatches(_ given: String?, _ token: String) -> Bool {
        let x = Array((given ?? "").utf8)
        let y = Array(("Bearer " + token).utf8)
        var diff = x.count ^ y.count
        for i in 0..<min(x.count, y.count) { diff |= Int(x[i] ^ y[i]) }
        return diff == 0
    }
}
