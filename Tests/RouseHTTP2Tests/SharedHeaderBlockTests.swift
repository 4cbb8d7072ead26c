import RouseEventLoop
import RouseHTTP2
import RouseTestSupport
import Testing

/// Requests that take their common fields from an `HTTP2HeaderBlock` (encoded once, not copied by nghttp2) must
/// reach the server exactly as if each had carried them itself.
@Suite("HTTP/2 client: shared header blocks", .timeLimit(.minutes(1)))
struct SharedHeaderBlockTests {
    @Test("each request carries the block's pseudo-headers, :path prefix and fields, then its own, and its body")
    func requestsSeeBlockAndOwnFields() async throws {
        let server = try makeServer { request, stream in
            let echoed = request.headers.map { "\($0.name)=\($0.value)" }.joined(separator: ";")
            let text = "\(request.method) \(request.scheme)://\(request.authority)\(request.path)|\(echoed)|"
            stream.respond(status: 200, body: Array(text.utf8) + request.body)
        }
        defer { Task { await server.shutdown() } }
        let loop = try EventLoop(name: "shared-block-test")
        loop.start()
        defer { loop.stopAndWait() }
        var tls = TLSConfiguration()
        tls.trustRootsFile = Repository.cert("ca.pem")
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: tls), on: loop)
        defer { client.close() }
        let long = String(repeating: "t", count: 300)
        let blocks = [
            HTTP2HeaderBlock(
                authority: "push.example", pathPrefix: "/3/device/",
                headers: [
                    HTTP2Header("authorization", "bearer \(long)", neverIndex: true),
                    HTTP2Header("apns-topic", "com.example.one"),
                ]),
            HTTP2HeaderBlock(
                method: "PUT", authority: "other.example:8443", headers: [HTTP2Header("apns-push-type", "alert")]),
        ]
        // Many requests at once, alternating the blocks, so the scratch arrays and the blocks are reused while
        // earlier requests are still unsent; each request's own fields differ in length.
        try await withThrowingTaskGroup(of: (Int, HTTP2ClientResult).self) { group in
            for index in 0..<200 {
                group.addTask {
                    let own = [HTTP2Header("apns-id", String(repeating: "\(index % 10)", count: 1 + index % 40))]
                    let result = await client.send(
                        HTTP2ClientRequest(
                            path: index % 2 == 0 ? "token\(index)" : "/token\(index)", authority: "ignored",
                            headers: own, body: Array("body\(index)".utf8),
                            shared: blocks[index % 2]))
                    return (index, result)
                }
            }
            for try await (index, result) in group {
                guard case .response(200, _, let body) = result else {
                    Issue.record("request \(index): \(result)")
                    continue
                }
                let id = String(repeating: "\(index % 10)", count: 1 + index % 40)
                let expected =
                    index % 2 == 0
                    ? "POST https://push.example/3/device/token\(index)|authorization=bearer \(long);"
                        + "apns-topic=com.example.one;apns-id=\(id)|body\(index)"
                    : "PUT https://other.example:8443/token\(index)|apns-push-type=alert;apns-id=\(id)|body\(index)"
                #expect(String(decoding: body, as: UTF8.self) == expected, "request \(index)")
            }
        }
    }

    @Test("a block only the request holds lives until its HEADERS are sent (nghttp2 points into it)")
    func blockOutlivesItsCaller() async throws {
        let server = try makeServer { request, stream in
            stream.respond(status: 200, body: Array("\(request.path)|\(request.header("x-shared") ?? "-")".utf8))
        }
        defer { Task { await server.shutdown() } }
        let loop = try EventLoop(name: "shared-block-lifetime")
        loop.start()
        defer { loop.stopAndWait() }
        var tls = TLSConfiguration()
        tls.trustRootsFile = Repository.cert("ca.pem")
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: tls), on: loop)
        defer { client.close() }
        try await withThrowingTaskGroup(of: (Int, HTTP2ClientResult).self) { group in
            for index in 0..<100 {
                group.addTask {
                    // Made and dropped here: the request (then the stream) is its only owner.
                    let request = HTTP2ClientRequest(
                        path: "/p\(index)", authority: "",
                        shared: HTTP2HeaderBlock(
                            authority: "localhost",
                            headers: [HTTP2Header("x-shared", "value-\(index)-" + .init(repeating: "x", count: 64))]))
                    return (index, await client.send(request))
                }
            }
            for try await (index, result) in group {
                guard case .response(200, _, let body) = result else {
                    Issue.record("request \(index): \(result)")
                    continue
                }
                #expect(
                    String(decoding: body, as: UTF8.self)
                        == "/p\(index)|value-\(index)-" + String(repeating: "x", count: 64))
            }
        }
    }
}
