import Foundation
import RouseHTTP2
import RouseTestSupport
import Testing

/// The rapid-reset guard lets libcurl 7.88 (which resets every stream after its response) keep its connection,
/// and still stops a real rapid-reset attack.
@Suite("Rapid-reset guard", .timeLimit(.minutes(2)))
struct RapidResetTests {
    /// Runs `count` sequential requests with the curl CLI (libcurl 7.88 on Debian 12) on one handle and returns
    /// how many connections it had to open.
    func curlConnections(_ server: HTTP2Server, count: Int) async throws -> Int {
        let config = (0..<count).map { "url = \(server.httpsURL)/r\($0)\noutput = /dev/null\n" }.joined()
        let out = try await ChildProcess.run(
            curlCLI,
            ["-sS", "--http2", "--cacert", Repository.cert("ca.pem"), "-w", "%{num_connects}\\n", "-K", "-"],
            stdin: Data(config.utf8), timeout: .seconds(120))
        #expect(out.status == 0, "\(out.stderr)")
        return out.stdout.split(separator: "\n").compactMap { Int($0) }.reduce(0, +)
    }

    @Test("libcurl 7.88 keeps one connection for 2500 requests under Rouse's guard")
    func curlKeepsConnection() async throws {
        let server = try makeServer { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        #expect(try await curlConnections(server, count: 2500) == 1)
    }

    @Test("nghttp2's own limiter (the alternative) tears libcurl's connection down after ~1000 streams")
    func nghttp2LimiterDropsCurl() async throws {
        let server = try makeServer(configure: { $0.resetProtection = .nghttp2 }) { _, stream in
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        #expect(try await curlConnections(server, count: 2500) > 1)
    }

    @Test("a real rapid-reset attack (open, cancel, repeat) gets GOAWAY ENHANCE_YOUR_CALM")
    func attackStopped() async throws {
        // The handler never answers: every stream is still being worked on when the client cancels it.
        let server = try makeServer(tls: false) { _, _ in }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port)
        try client.sendPreface()
        var burst: [UInt8] = []
        for i in 0..<1200 {
            let id = UInt32(2 * i + 1)
            // HEADERS (END_STREAM|END_HEADERS): :method GET, :scheme http, :path / from the static table.
            burst += RawH2Client.frame(type: 1, flags: 0x5, stream: id, payload: [0x82, 0x86, 0x84])
            burst += RawH2Client.frame(type: 3, stream: id, payload: [0, 0, 0, 8])  // RST_STREAM CANCEL
        }
        try client.send(burst)
        let goAway = try #require(try client.readUntil { $0.type == 7 })
        let code = goAway.payload[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(code == 0xb)
    }
}
