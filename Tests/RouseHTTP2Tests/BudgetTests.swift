import Foundation
import RouseClock
import RouseHTTP2
import RouseTestSupport
import Synchronization
import Testing

/// `:authority: localhost`, HPACK literal without indexing (name index 1).
private let authority: [UInt8] = [0x01, 0x09] + Array("localhost".utf8)

/// HEADERS for `POST /` over h2c (HPACK static table: :method POST, :path /, :scheme http), END_HEADERS, and
/// END_STREAM only when asked: without it the request stays half-open.
private func postHeaders(stream: UInt32, endStream: Bool = false) -> [UInt8] {
    RawH2Client.frame(
        type: 1, flags: 0x4 | (endStream ? 0x1 : 0), stream: stream, payload: [0x83, 0x84, 0x86] + authority)
}

private func data(stream: UInt32, count: Int, endStream: Bool = false) -> [UInt8] {
    RawH2Client.frame(
        type: 0, flags: endStream ? 0x1 : 0, stream: stream, payload: [UInt8](repeating: 0x61, count: count))
}

/// The error code of a RST_STREAM frame.
private func errorCode(_ frame: RawH2Client.Frame) -> UInt32 {
    frame.payload.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
}

/// Every peer is assumed hostile: the kernel's per-connection and per-server budgets.
@Suite("HTTP/2 server kernel budgets", .timeLimit(.minutes(1)))
struct BudgetTests {
    @Test("a half-open stream past the idle timeout does not make the idle timer spin")
    func idleTimerDoesNotSpin() async throws {
        let server = try makeServer(
            tls: false,
            configure: {
                $0.idleTimeout = .milliseconds(100)
                $0.requestTimeout = nil
            }
        ) { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port, receiveTimeout: .milliseconds(50))
        try client.sendPreface()
        try client.send(postHeaders(stream: 1))
        // Past the idle timeout with the stream open, then a window of 600 ms: the old timer re-armed every
        // millisecond from here on (~600 wake-ups); now it looks again once per idle period (~6).
        try await Task.sleep(for: .milliseconds(300))
        let before = server.loopWakeUps
        try await Task.sleep(for: .milliseconds(600))
        let wakeUps = server.loopWakeUps - before
        #expect(wakeUps < 100, "\(wakeUps) wake-ups in 600 ms")
        #expect(server.connectionCount == 1, "the stream keeps its connection")
    }

    @Test("a request that does not end in time is reset (CANCEL) and counted")
    func requestDeadline() async throws {
        let clock = ManualClock()
        let server = try makeServer(tls: false, clock: clock, configure: { $0.requestTimeout = .milliseconds(200) }) {
            _, stream in stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port)
        try client.sendPreface()
        try client.send(postHeaders(stream: 1))
        _ = try client.framesUntilSettled()  // the stream is open, its deadline 200 ms from now
        clock.advance(by: .milliseconds(199))
        #expect(!(try client.framesUntilSettled()).contains { $0.type == 3 }, "no reset before the deadline")
        #expect(server.limitCounts.requestTimeouts == 0)
        clock.advance(by: .milliseconds(1))
        let reset = try #require(try client.readUntil { $0.type == 3 && $0.streamID == 1 })
        #expect(errorCode(reset) == 0x8)
        #expect(server.limitCounts.requestTimeouts == 1)
        // A request that ends in time is answered on the same connection.
        try client.send(postHeaders(stream: 3, endStream: true))
        #expect(try client.readUntil { $0.type == 1 && $0.streamID == 3 } != nil)
    }

    @Test("bodies larger than the initial windows arrive whole while other requests are parked unfinished")
    func largeBodiesDoNotStall() async throws {
        let bodies = Mutex<[Int]>([])
        let server = try makeServer(
            tls: false,
            configure: {
                $0.requestTimeout = .seconds(30)
                $0.maxRequestBodySize = 1 << 20
            }
        ) { request, stream in
            bodies.withLock { $0.append(request.body.count) }
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port)
        try client.sendPreface()
        // Two unfinished requests park 96 KiB; then a 300,000-byte body on a third stream, more than the 65,535-byte
        // initial stream and connection windows, sent as the server's WINDOW_UPDATEs allow.
        try client.send(postHeaders(stream: 1) + data(stream: 1, count: 16384) + data(stream: 1, count: 16384))
        try client.send(postHeaders(stream: 3) + data(stream: 3, count: 16384) + data(stream: 3, count: 16384))
        try client.send(data(stream: 1, count: 16384) + data(stream: 3, count: 16384))
        try client.send(postHeaders(stream: 5))
        var connectionWindow = 65535 - 6 * 16384
        var streamWindow = 65535
        var sent = 0
        while sent < 300_000 {
            let chunk = min(16384, 300_000 - sent, connectionWindow, streamWindow)
            if chunk > 0 {
                try client.send(data(stream: 5, count: chunk, endStream: sent + chunk == 300_000))
                sent += chunk
                connectionWindow -= chunk
                streamWindow -= chunk
                continue
            }
            let update = try #require(try client.readUntil { $0.type == 8 }, "a WINDOW_UPDATE after \(sent) bytes")
            let increment = Int(update.payload.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7fff_ffff)
            if update.streamID == 0 {
                connectionWindow += increment
            } else if update.streamID == 5 {
                streamWindow += increment
            }
        }
        #expect(try client.readUntil { $0.type == 1 && $0.streamID == 5 } != nil, "answered")
        #expect(bodies.withLock { $0 } == [300_000])
    }

    @Test("buffered request bytes over the connection's budget: REFUSED_STREAM, counted, connection kept")
    func bufferBudget() async throws {
        let server = try makeServer(
            tls: false,
            configure: {
                $0.maxBufferedRequestBytes = 20000
                $0.requestTimeout = nil
            }
        ) { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        let client = try RawH2Client(port: server.port)
        try client.sendPreface()
        try client.send(postHeaders(stream: 1) + data(stream: 1, count: 12000))
        try client.send(postHeaders(stream: 3) + data(stream: 3, count: 12000))
        let reset = try #require(try client.readUntil { $0.type == 3 })
        #expect(reset.streamID == 3)
        #expect(errorCode(reset) == 0x7)
        #expect(server.limitCounts.streamsRefusedBufferBudget == 1)
        // Stream 1 was within budget and is answered once it ends.
        try client.send(data(stream: 1, count: 0, endStream: true))
        #expect(try client.readUntil { $0.type == 1 && $0.streamID == 1 } != nil)
    }

    @Test("buffered request bytes over the listener's budget, each connection within its own: REFUSED_STREAM, counted")
    func listenerBufferBudget() async throws {
        let server = try makeServer(
            tls: false,
            configure: {
                $0.maxBufferedRequestBytes = 20000
                $0.maxListenerBufferedRequestBytes = 30000
                $0.requestTimeout = nil
            }
        ) { _, stream in stream.respond(status: 200) }
        defer { Task { await server.shutdown() } }
        let first = try RawH2Client(port: server.port)
        let second = try RawH2Client(port: server.port)
        for client in [first, second] { try client.sendPreface() }
        try first.send(postHeaders(stream: 1) + data(stream: 1, count: 12000))
        // Within the first's budget, and the listener's.
        try first.send(postHeaders(stream: 3) + data(stream: 3, count: 4000))
        // A PING answered after them: the server has read (and charged) both.
        try first.send(RawH2Client.frame(type: 6, flags: 0, stream: 0, payload: [UInt8](repeating: 1, count: 8)))
        #expect(try first.readUntil { $0.type == 6 && $0.flags & 1 == 1 } != nil)
        #expect(server.limitCounts.streamsRefusedListenerBuffer == 0)
        // The second connection is within its own budget (12 000 < 20 000), not the listener's (16 000 + 12 000 + …).
        try second.send(postHeaders(stream: 1) + data(stream: 1, count: 12000))
        try second.send(postHeaders(stream: 3) + data(stream: 3, count: 6000))
        let reset = try #require(try second.readUntil { $0.type == 3 })
        #expect(errorCode(reset) == 0x7)
        #expect(server.limitCounts.streamsRefusedListenerBuffer == 1)
        #expect(server.limitCounts.streamsRefusedBufferBudget == 0)
        // Once the first connection's requests end, their bytes leave the listener's budget.
        try first.send(data(stream: 1, count: 0, endStream: true) + data(stream: 3, count: 0, endStream: true))
        #expect(try first.readUntil { $0.type == 1 && $0.streamID == 3 } != nil)
        try second.send(postHeaders(stream: 5) + data(stream: 5, count: 6000, endStream: true))
        #expect(try second.readUntil { $0.type == 1 && $0.streamID == 5 } != nil)
        #expect(server.limitCounts.streamsRefusedListenerBuffer == 1)
    }

    @Test("connections over the per-address cap are closed at accept, and counted")
    func perAddressCap() async throws {
        let server = try makeServer(tls: false, configure: { $0.maxConnectionsPerAddress = 2 }) { _, stream in
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let first = try RawH2Client(port: server.port)
        let second = try RawH2Client(port: server.port)
        for client in [first, second] {
            try client.sendPreface()
            #expect(try client.readUntil { $0.type == 4 } != nil, "admitted: the server's SETTINGS arrive")
        }
        let third = try RawH2Client(port: server.port)
        try? third.sendPreface()
        #expect(try third.readUntil { _ in false } == nil, "refused: closed without a frame")
        #expect(server.limitCounts.connectionsRefusedPerAddress == 1)
        first.close()
        // A slot is free again once the server saw the close.
        let deadline = ContinuousClock.now + .seconds(5)
        while server.connectionCount > 1 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let fourth = try RawH2Client(port: server.port)
        try fourth.sendPreface()
        #expect(try fourth.readUntil { $0.type == 4 } != nil)
    }

    @Test("the global connection cap holds across addresses")
    func globalCap() async throws {
        let server = try makeServer(tls: false, configure: { $0.maxConnections = 1 }) { _, stream in
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let first = try RawH2Client(port: server.port)
        try first.sendPreface()
        #expect(try first.readUntil { $0.type == 4 } != nil)
        let second = try RawH2Client(port: server.port)
        try? second.sendPreface()
        #expect(try second.readUntil { _ in false } == nil)
        #expect(server.limitCounts.connectionsRefused == 1)
    }

    @Test("a connection must authenticate within the deadline; PINGs and requests do not extend it")
    func authenticationDeadline() async throws {
        let clock = ManualClock()
        let server = try makeServer(
            tls: false, clock: clock,
            configure: {
                $0.idleTimeout = .seconds(3600)
                $0.authenticationTimeout = .milliseconds(300)
            }
        ) { request, stream in
            if request.path == "/login" { stream.connection.markAuthenticated() }
            stream.respond(status: 200)
        }
        defer { Task { await server.shutdown() } }
        let anonymous = try RawH2Client(port: server.port, receiveTimeout: .milliseconds(50))
        try anonymous.sendPreface()
        let trusted = try RawH2Client(port: server.port, receiveTimeout: .milliseconds(50))
        try trusted.sendPreface()
        // :method GET, :scheme http, :path literal "/login" (indexed name 4).
        let login: [UInt8] = [0x82, 0x86, 0x04, 0x06] + Array("/login".utf8) + authority
        try trusted.send(RawH2Client.frame(type: 1, flags: 0x5, stream: 1, payload: login))
        try anonymous.send(postHeaders(stream: 1, endStream: true))
        // Both keep the connection busy with a request and PINGs, on a manual clock: nothing at 299 ms, GOAWAY for
        // the anonymous one at 300 ms, still none for the authenticated one a second later.
        let goAway = { (frames: [RawH2Client.Frame]) in frames.contains { $0.type == 7 } }
        #expect(!goAway(try anonymous.framesUntilSettled()))
        #expect(!goAway(try trusted.framesUntilSettled()))
        clock.advance(by: .milliseconds(299))
        #expect(!goAway(try anonymous.framesUntilSettled()), "no GOAWAY before the deadline")
        #expect(!goAway(try trusted.framesUntilSettled()))
        clock.advance(by: .milliseconds(1))
        #expect(
            try anonymous.readUntil { $0.type == 7 } != nil, "GOAWAY for the connection that never authenticated")
        clock.advance(by: .seconds(1))
        #expect(!goAway(try trusted.framesUntilSettled()), "none for the authenticated one")
        #expect(server.limitCounts.authenticationTimeouts == 1)
    }
}
