import Foundation
import RouseClock
import RouseHTTP2
import RouseTestSupport
import Synchronization
import Testing

@Suite("HTTP/2 server kernel", .timeLimit(.minutes(1)))
struct ServerTests {
    @Test("advertises APNs' SETTINGS and answers over TLS with ALPN h2")
    func settingsAndEcho() async throws {
        let server = try makeServer { request, stream in
            stream.respond(
                status: 200, headers: [HTTP2Header("x-echo-path", request.path)],
                body: Array("got \(request.body.count) bytes".utf8))
        }
        defer { Task { await server.shutdown() } }
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-body-\(UUID())")
        try Data("hello".utf8).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }
        let out = try await ChildProcess.run(nghttp, ["-v", "-d", body.path, "\(server.httpsURL)/3/device/ab"])
        let text = out.stdout
        #expect(out.status == 0, "\(out.stderr)")
        #expect(text.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1000]"))
        #expect(text.contains("[SETTINGS_HEADER_TABLE_SIZE(0x01):4096]"))
        #expect(text.contains("[SETTINGS_MAX_HEADER_LIST_SIZE(0x06):8000]"))
        #expect(text.contains("x-echo-path: /3/device/ab"))
        #expect(text.contains("got 5 bytes"))
    }

    @Test("h2c with prior knowledge, for debugging")
    func cleartext() async throws {
        let server = try makeServer(tls: false) { _, stream in stream.respond(status: 204) }
        defer { Task { await server.shutdown() } }
        let out = try await nghttpVerbose("http://127.0.0.1:\(server.port)/x")
        #expect(out.contains(":status: 204"))
    }

    @Test("streaming response written from another thread, with trailers")
    func streamingWithTrailers() async throws {
        let server = try makeServer { _, stream in
            stream.sendHead(status: 200, headers: [HTTP2Header("content-type", "text/plain")])
            Thread.detachNewThread {
                for i in 0..<3 { stream.write(Array("chunk-\(i);".utf8)) }
                stream.finish(trailers: [HTTP2Header("x-trailer", "done")])
            }
        }
        defer { Task { await server.shutdown() } }
        let out = try await nghttpVerbose("\(server.httpsURL)/stream")
        #expect(out.contains("chunk-0;"))
        let all = try await ChildProcess.run(nghttp, ["\(server.httpsURL)/stream"])
        #expect(all.stdout == "chunk-0;chunk-1;chunk-2;")
        #expect(out.contains("x-trailer: done"))
    }

    @Test("GOAWAY on demand carries code, last-stream-id and a JSON debug payload")
    func goAwayOnDemand() async throws {
        let server = try makeServer { request, stream in
            stream.connection.goAway(
                code: .internalError, lastStreamID: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        }
        defer { Task { await server.shutdown() } }
        let out = try await nghttpVerbose("\(server.httpsURL)/x")
        #expect(out.contains("recv GOAWAY frame"))
        #expect(out.contains("last_stream_id=0, error_code=INTERNAL_ERROR(0x02)"))
        #expect(out.contains(#"{"reason":"Shutdown"}"#))
    }

    @Test("RST_STREAM on demand")
    func resetOnDemand() async throws {
        let server = try makeServer { _, stream in stream.reset(.refusedStream) }
        defer { Task { await server.shutdown() } }
        let out = try await nghttpVerbose("\(server.httpsURL)/x")
        #expect(out.contains("recv RST_STREAM frame"))
        #expect(out.contains("error_code=REFUSED_STREAM(0x07)"))
    }

    @Test("SETTINGS changed mid-connection")
    func settingsMidConnection() async throws {
        let server = try makeServer { _, stream in
            stream.connection.setMaxConcurrentStreams(1)
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let out = try await nghttpVerbose("\(server.httpsURL)/x")
        #expect(out.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1]"))
    }

    @Test("PING is answered with the same opaque data")
    func pingAnswered() async throws {
        let server = try makeServer(tls: false) { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port)
        try client.sendPreface()
        let opaque: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        try client.send(RawH2Client.frame(type: 6, payload: opaque))
        let ack = try client.readUntil { $0.type == 6 }
        #expect(ack?.flags == 1)
        #expect(ack?.payload == opaque)
    }

    @Test("idle connections get a GOAWAY with the configured debug data, then close")
    func idleTimeout() async throws {
        let clock = ManualClock()
        let server = try makeServer(
            tls: false, clock: clock,
            configure: {
                $0.idleTimeout = .milliseconds(300)
                $0.idleGoAwayDebugData = Array(#"{"reason":"IdleTimeout"}"#.utf8)
            }
        ) { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port)
        try client.sendPreface()
        _ = try client.framesUntilSettled()
        // Idle counts from the last frame read (the PINGs of each look are frames too).
        clock.advance(by: .milliseconds(299))
        #expect(!(try client.framesUntilSettled()).contains { $0.type == 7 }, "no GOAWAY before the timeout")
        clock.advance(by: .milliseconds(300))
        let frame = try #require(try client.readUntil { $0.type == 7 })
        #expect(String(decoding: frame.payload.dropFirst(8), as: UTF8.self) == #"{"reason":"IdleTimeout"}"#)
        #expect(try client.readUntil { _ in false } == nil, "connection closes after the idle GOAWAY")
    }

    @Test("a client that never starts TLS is dropped at the handshake deadline")
    func silentClient() async throws {
        let server = try makeServer(configure: { $0.handshakeTimeout = .milliseconds(200) }) { _, stream in
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port)
        let started = ContinuousClock.now
        #expect(try client.readUntil { _ in false } == nil, "the server closes the connection")
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        // Without the deadline the connection stays open and the read above fails at the client's 10 s receive
        // deadline; the bound is only a sanity check, far above 200 ms for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test("garbage instead of the preface: connection error, server keeps serving")
    func garbagePreface() async throws {
        let server = try makeServer(tls: false) { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port)
        try client.send(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8) + [UInt8](repeating: 0xff, count: 100))
        #expect(try client.readUntil { _ in false } == nil)
        let out = try await nghttpVerbose("http://127.0.0.1:\(server.port)/ok")
        #expect(out.contains(":status: 200"))
    }

    @Test("malformed frames get GOAWAY PROTOCOL_ERROR or FRAME_SIZE_ERROR")
    func malformedFrames() async throws {
        let server = try makeServer(tls: false) { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        // A PING with 3 bytes of payload is a FRAME_SIZE_ERROR; a DATA frame on stream 0 a PROTOCOL_ERROR.
        let cases: [([UInt8], UInt32)] = [
            (RawH2Client.frame(type: 6, payload: [1, 2, 3]), 0x6),
            (RawH2Client.frame(type: 0, stream: 0, payload: [1]), 0x1),
            (RawH2Client.frame(type: 1, flags: 0x5, stream: 2, payload: [0x82]), 0x1),  // even stream id
        ]
        for (bytes, expected) in cases {
            let client = try RawH2Client(port: server.port)
            try client.sendPreface()
            try client.send(bytes)
            let goAway = try #require(try client.readUntil { $0.type == 7 })
            let code = goAway.payload[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            #expect(code == expected)
        }
    }

    @Test("an oversized header list gets 431; a huge body is counted, not buffered")
    func oversizedInput() async throws {
        let seen = Mutex<(Int, Bool, Int)?>(nil)
        let server = try makeServer(configure: { $0.maxRequestBodySize = 4096 }) { request, stream in
            seen.withLock { $0 = (request.body.count, request.bodyTruncated, request.bodyLength) }
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let big = String(repeating: "a", count: 9000)
        let headers = try await nghttpVerbose("\(server.httpsURL)/x", extra: ["-H", "x-big: \(big)"])
        #expect(headers.contains(":status: 431"))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-big-\(UUID())")
        try Data(count: 1 << 20).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let out = try await nghttpVerbose("\(server.httpsURL)/x", extra: ["-d", file.path])
        #expect(out.contains(":status: 200"))
        let s = try #require(seen.withLock { $0 })
        #expect(s.0 == 4096)
        #expect(s.1)
        #expect(s.2 == 1 << 20)
    }

    @Test("a client that offers ALPN without h2 is refused in the handshake with no_application_protocol")
    func http11Refused() async throws {
        let server = try makeServer { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        let out = try await ChildProcess.run(
            curlCLI, ["-sS", "--cacert", Repository.cert("ca.pem"), "--http1.1", "\(server.localhostURL)/x"])
        #expect(out.status == 35, "\(out.stderr)")  // CURLE_SSL_CONNECT_ERROR
        #expect(out.stderr.contains("no application protocol"), "\(out.stderr)")
    }

    @Test("TLS without ALPN is served as HTTP/2 when the client sends the preface, as APNs does")
    func noALPNPriorKnowledge() async throws {
        let server = try makeServer { request, stream in
            stream.respond(status: 200, body: Array("path \(request.path)".utf8))
        }
        defer { Task { await server.shutdown() } }
        let out = try await ChildProcess.run(
            curlCLI,
            [
                "-sS", "-i", "--cacert", Repository.cert("ca.pem"), "--http2-prior-knowledge", "--no-alpn",
                "\(server.localhostURL)/3/device/ab",
            ])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.hasPrefix("HTTP/2 200"), "\(out.stdout)")
        #expect(out.stdout.hasSuffix("path /3/device/ab"), "\(out.stdout)")
    }

    @Test("TLS without ALPN and an HTTP/1.1 request: a plain 505 that says why, no HTTP/2 frame bytes")
    func noALPNHTTP11() async throws {
        let served = Atomic<Int>(0)
        let server = try makeServer { _, stream in
            served.add(1, ordering: .relaxed)
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let out = try await ChildProcess.run(
            curlCLI,
            ["-sS", "-i", "--cacert", Repository.cert("ca.pem"), "--http1.1", "--no-alpn", "\(server.localhostURL)/x"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.hasPrefix("HTTP/1.1 505 HTTP Version Not Supported\r\n"), "\(out.stdout)")
        #expect(out.stdout.contains("This server speaks HTTP/2 only"))
        #expect(served.load(ordering: .relaxed) == 0)
        // The server goes on serving HTTP/2 clients.
        let ok = try await nghttpVerbose("\(server.httpsURL)/ok")
        #expect(ok.contains(":status: 200"))
    }

    @Test("many connections and streams at once (h2load)")
    func load() async throws {
        let count = Atomic<Int>(0)
        let server = try makeServer(configure: { $0.workers = 2 }) { _, stream in
            count.add(1, ordering: .relaxed)
            stream.respond(status: 200, body: [1, 2, 3])
        }
        defer { Task { await server.shutdown() } }
        let out = try await ChildProcess.run(h2load, ["-n", "20000", "-c", "20", "-m", "50", "\(server.httpsURL)/x"])
        #expect(out.stdout.contains("20000 succeeded, 0 failed, 0 errored"), "\(out.stdout)")
        #expect(count.load(ordering: .relaxed) == 20000)
    }

    @Test("workers: one socket accepts and deals connections to the loops in turn (8 connections: 4 and 4)")
    func connectionsDealtRoundRobin() async throws {
        // Per loop, how many requests arrived (one request per connection). Over two SO_REUSEPORT sockets, as
        // before, the split followed a hash of the client ports: 4 and 4 only 70 times in 256.
        let perLoop = Mutex<[ObjectIdentifier: Int]>([:])
        let server = try makeServer(configure: { $0.workers = 2 }) { _, stream in
            perLoop.withLock { $0[ObjectIdentifier(stream.connection.eventLoop), default: 0] += 1 }
            stream.respond(status: 200)
        }
        let out = try await ChildProcess.run(h2load, ["-n", "8", "-c", "8", "-m", "1", "\(server.httpsURL)/x"])
        #expect(out.stdout.contains("8 succeeded, 0 failed, 0 errored"), "\(out.stdout)")
        #expect(perLoop.withLock { $0.values.sorted() } == [4, 4])
        // Shutdown reaches the connections of every loop.
        await server.shutdown(gracePeriod: .seconds(5))
        #expect(server.connectionCount == 0)
    }

    @Test("graceful shutdown: GOAWAY, in-flight stream finishes, then closed")
    func gracefulShutdown() async throws {
        let pending = Mutex<HTTP2Stream?>(nil)
        let arrived = AsyncStream<Void>.makeStream()
        let server = try makeServer { _, stream in
            pending.withLock { $0 = stream }
            arrived.continuation.yield()
        }
        let client = Task { try await nghttpVerbose("\(server.httpsURL)/slow") }
        for await _ in arrived.stream { break }
        let shutdown = Task { await server.shutdown(gracePeriod: .seconds(10)) }
        // The in-flight request is still answered after shutdown began.
        try await Task.sleep(for: .milliseconds(100))
        pending.withLock { $0?.respond(status: 200, body: Array("late".utf8)) }
        let out = try await client.value
        await shutdown.value
        #expect(out.contains("recv GOAWAY frame"))
        #expect(out.contains("late"))
        #expect(server.connectionCount == 0)
    }
}
