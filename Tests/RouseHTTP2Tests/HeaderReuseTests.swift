import RouseEventLoop
import RouseHTTP2
import RouseTestSupport
import Testing

/// The server reuses the previous request's header strings on a connection when the bytes repeat: every request
/// must still see exactly its own header block.
@Suite("HTTP/2 server kernel: header strings across requests", .timeLimit(.minutes(1)))
struct HeaderReuseTests {
    @Test("each request on one connection sees its own names and values, repeated, changed, added or dropped")
    func ownHeadersPerRequest() async throws {
        let server = try makeServer { request, stream in
            let echoed = request.headers.map { "\($0.name)=\($0.value)" }.joined(separator: ";")
            stream.respond(status: 200, body: Array("\(request.path)|\(echoed)".utf8))
        }
        defer { Task { await server.shutdown() } }
        let loop = try EventLoop(name: "header-reuse-test")
        loop.start()
        var tls = TLSConfiguration()
        tls.trustRootsFile = Repository.cert("ca.pem")
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: tls), on: loop)
        defer { client.close() }
        let long = String(repeating: "v", count: 400)  // Past what the cache keeps per field.
        let blocks: [[HTTP2Header]] = [
            [HTTP2Header("x-a", "one"), HTTP2Header("x-b", "two")],
            [HTTP2Header("x-a", "one"), HTTP2Header("x-b", "two")],
            [HTTP2Header("x-a", "one"), HTTP2Header("x-b", "TWO")],
            [HTTP2Header("x-b", "two"), HTTP2Header("x-a", "one")],
            [HTTP2Header("x-a", long), HTTP2Header("x-b", "two"), HTTP2Header("x-c", "three")],
            [HTTP2Header("x-a", "one"), HTTP2Header("x-b", "two"), HTTP2Header("x-c", "three")],
            [HTTP2Header("x-a", "one")],
            [HTTP2Header("x-a", "")],
        ]
        for (index, headers) in blocks.enumerated() {
            let path = "/request/\(index)"
            let result = await client.send(
                HTTP2ClientRequest(method: "GET", path: path, authority: "localhost", headers: headers))
            guard case .response(200, _, let body) = result else {
                Issue.record("request \(index): \(result)")
                continue
            }
            let text = String(decoding: body, as: UTF8.self)
            let expected = headers.map { "\($0.name)=\($0.value)" }.joined(separator: ";")
            // The client may add headers of its own after ours; ours come first, in order.
            #expect(text.hasPrefix("\(path)|\(expected)"), "request \(index): \(text)")
        }
    }
}
