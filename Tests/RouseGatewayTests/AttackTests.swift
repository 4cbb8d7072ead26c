import Foundation
import RouseCurl
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import RouseWire
import Testing

/// An attacker without credentials, over real TLS, against the real `rouse-gateway` process, with an HTTP/2 client
/// we did not write (`Tests/Interop/h2_attack.py`, Python h2).
@Suite("Gateway under attack: half-open streams and idle timers (Python h2 over TLS)", .timeLimit(.minutes(3)))
struct AttackTests {
    static let mebibyte = 1024  // in KiB, as /proc shows memory

    @Test("20 connections × 1000 half-open streams × 64 KiB on each port: RSS bounded, streams refused or cancelled")
    func halfOpenStreams() async throws {
        let directory = try TemporaryDirectory()
        let gateway = try await GatewayProcess.start(directory: directory, database: directory.path + "/g.sqlite")
        defer { gateway.kill() }
        let rssBefore = try #require(ProcessProbe.statusKiB(gateway.pid, "VmRSS"))
        let socketsBefore = ProcessProbe.sockets(gateway.pid)
        let (connections, streams) = (20, 1000)
        async let onDevice = HalfOpenAttack.start(
            port: gateway.devicePort, path: "/device/v1/tokens", connections: connections, streams: streams,
            directory: directory)
        async let onProvider = HalfOpenAttack.start(
            port: gateway.providerPort, path: "/3/device/" + String(repeating: "ab", count: 32),
            connections: connections, streams: streams, directory: directory)
        let (device, provider) = try await (onDevice, onProvider)

        // Everything sent and read by the gateway (a PING answered after it): its memory holds what it kept.
        let deviceHolding = try await device.phase("holding", timeout: .seconds(90))
        let providerHolding = try await provider.phase("holding", timeout: .seconds(90))
        let peak = try #require(ProcessProbe.statusKiB(gateway.pid, "VmHWM"))
        // Before the budgets: 40 such connections took the gateway from 40 MB to 2.8 GB (the device port took all
        // 1000 streams of each connection and nghttp2 handed back every window at once).
        #expect(peak < 200 * Self.mebibyte, "peak RSS \(peak / Self.mebibyte) MiB")
        for report in [deviceHolding, providerHolding] {
            #expect(report.connections == connections && report.streams == connections * streams, "\(report)")
            #expect(report.goAways.isEmpty && report.closedByPeer == 0, "the connections are kept: \(report)")
        }
        // The pressure was real: what the attacker sent is not what the gateway keeps. The device port alone took
        // at least the bodies of 15 admitted streams per connection (a refused stream's bytes are dropped as they
        // arrive, its window coming back at once); what it parked stays within the 1 MiB buffer budget per
        // connection, which the RSS bound above checks.
        #expect(deviceHolding.bodyBytes >= connections * 15 * 65536, "\(deviceHolding)")

        // The device port admits 16 streams per connection, the provider port 1 until a valid token: the rest are
        // refused at once; the admitted ones did not end within requestTimeoutSeconds (10) and are cancelled.
        let deviceSettled = try await device.phase("settled", timeout: .seconds(30))
        let providerSettled = try await provider.phase("settled", timeout: .seconds(30))
        // On the device port, 16 × 64 KiB bodies and their headers are a little over the 1 MiB buffer budget: the
        // last admitted stream of a connection may be refused for the budget instead of cancelled at the deadline.
        let deviceCancels = deviceSettled.resets["CANCEL"] ?? 0
        #expect((connections * 15...connections * 16).contains(deviceCancels), "\(deviceSettled.resets)")
        #expect(deviceSettled.resets["REFUSED_STREAM"] == connections * streams - deviceCancels)
        #expect(providerSettled.resets == ["REFUSED_STREAM": connections * (streams - 1), "CANCEL": connections])
        #expect(try await adminMetric(port: gateway.adminPort, limitHits("device", "request-timeout")) == deviceCancels)
        #expect(try await adminMetric(port: gateway.adminPort, limitHits("provider", "request-timeout")) == connections)

        // The attacker leaves: once the gateway closed its side of every connection, the memory is given back.
        _ = try await (device.stop(), provider.stop())
        let deadline = ContinuousClock.now + .seconds(20)
        while ProcessProbe.sockets(gateway.pid) > socketsBefore, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(ProcessProbe.sockets(gateway.pid) <= socketsBefore, "connections closed")
        let rssAfter = try #require(ProcessProbe.statusKiB(gateway.pid, "VmRSS"))
        #expect(
            rssAfter < rssBefore + 32 * Self.mebibyte,
            "RSS \(rssBefore / Self.mebibyte) MiB before, \(rssAfter / Self.mebibyte) MiB after (2.6 GB stayed before)")
    }

    @Test("a quiet channel (heartbeats off) and half-open streams held past the idle limit: no 1 kHz timer loop")
    func idleTimersDoNotSpin() async throws {
        let directory = try TemporaryDirectory()
        let database = directory.path + "/g.sqlite"
        // Device connections have a 1 s idle limit here; the half-open streams outlive it (their deadline is a
        // minute, and the authentication deadline an hour); nothing else is due: no heartbeats, no sweep.
        let gateway = try await GatewayProcess.start(
            directory: directory, database: database,
            limits: [
                "deviceIdleTimeoutSeconds": 1, "authenticationTimeoutSeconds": 3600, "requestTimeoutSeconds": 60,
                "sweepIntervalSeconds": 3600,
            ])
        defer { gateway.kill() }
        let store = try SQLiteGatewayStore(path: database)
        let secret = try Gateway.makeEnrollmentSecret(
            store: store, now: Gateway.systemMilliseconds(), validity: .seconds(600))
        let curl = try CurlHTTPClient()
        let client = try await DeviceClient.enroll(curl: curl, port: gateway.devicePort, secret: secret)
        let channel = try await client.channel()
        #expect(try await channel.next().type == "hello")

        async let onDevice = HalfOpenAttack.start(
            port: gateway.devicePort, path: "/device/v1/tokens", connections: 1, streams: 1, directory: directory)
        async let onProvider = HalfOpenAttack.start(
            port: gateway.providerPort, path: "/3/device/" + String(repeating: "ab", count: 32), connections: 1,
            streams: 1, directory: directory)
        let (device, provider) = try await (onDevice, onProvider)
        _ = try await (device.phase("holding", timeout: .seconds(30)), provider.phase("holding", timeout: .seconds(30)))
        // Past the 1 s idle limit with a stream open: the old idle timer re-armed every millisecond from here on.
        try await Task.sleep(for: .milliseconds(1500))
        let wakeUps = try await ProcessProbe.wakeUps(gateway.pid, over: .seconds(3))
        // Now: each half-open connection is looked at once a second (about 6 in 3 s); the timer loop made ~6000.
        #expect(wakeUps < 60, "\(wakeUps) wake-ups of the gateway's threads in 3 s")
        let (deviceDone, providerDone) = try await (device.stop(), provider.stop())
        for report in [deviceDone, providerDone] {
            #expect(report.openStreams == 1 && report.closedByPeer == 0, "the half-open stream was kept: \(report)")
        }
        try await channel.expectNoPush(within: .milliseconds(100))
        channel.close()
        await curl.shutdown()
        #expect(gateway.terminate() == 0, "stderr: \(gateway.stderr)")
    }

    @Test("3000 unauthenticated requests, each with its own 4 KiB apns-push-type: /metrics and RSS stay bounded")
    func headerValuesNameNoSeries() async throws {
        let directory = try TemporaryDirectory()
        let gateway = try await GatewayProcess.start(directory: directory, database: directory.path + "/g.sqlite")
        defer { gateway.kill() }
        let before = try await adminMetrics(port: gateway.adminPort)
        let rssBefore = try #require(ProcessProbe.statusKiB(gateway.pid, "VmRSS"))
        var provider = try await Provider.connect(port: gateway.providerPort)
        let token = String(repeating: "ab", count: 32)
        var statuses: [Int: Int] = [:]
        for n in 0..<3000 {
            let type = String(n) + String(repeating: "t", count: 4096)
            var answer = await provider.push(token: token, type: type, authorization: "bearer not-a-token")
            if answer.status < 0 {
                // The gateway may end a connection; an attacker simply opens the next one.
                provider.close()
                provider = try await Provider.connect(port: gateway.providerPort)
                answer = await provider.push(token: token, type: type, authorization: "bearer not-a-token")
            }
            statuses[answer.status, default: 0] += 1
        }
        provider.close()
        #expect(statuses[200] == nil && statuses.values.reduce(0, +) == 3000, "\(statuses)")
        let after = try await adminMetrics(port: gateway.adminPort)
        let series = after.split(separator: "\n").filter { $0.hasPrefix("rouse_gateway_pushes_in_total{") }
        // Before: one series per distinct header value, 3000 series and a 12 MB /metrics.
        #expect(series.count <= 4, "\(series.count) pushes_in series")
        #expect(
            after.utf8.count < before.utf8.count + 4096,
            "/metrics grew from \(before.utf8.count) to \(after.utf8.count) bytes")
        #expect(series.contains { $0.contains(#"type="invalid""#) }, "\(series)")
        let rssAfter = try #require(ProcessProbe.statusKiB(gateway.pid, "VmRSS"))
        #expect(rssAfter < rssBefore + 32 * Self.mebibyte, "RSS \(rssBefore) KiB before, \(rssAfter) KiB after")
        #expect(gateway.terminate() == 0, "stderr: \(gateway.stderr)")
    }

    @Test("3000 TCP connections opened and closed without TLS on each port: the loops' timer heaps stay small")
    func connectionChurnLeavesNoTimers() async throws {
        let directory = try TemporaryDirectory()
        // An hour of idle time on both ports (the provider port's, as APNs), and the authentication deadline.
        let gateway = try await GatewayProcess.start(
            directory: directory, database: directory.path + "/g.sqlite", limits: ["deviceIdleTimeoutSeconds": 3600])
        defer { gateway.kill() }
        let sample = "rouse_gateway_timer_entries"
        let before = try await adminMetric(port: gateway.adminPort, sample)
        let socketsBefore = ProcessProbe.sockets(gateway.pid)
        for _ in 0..<3000 {
            for port in [gateway.providerPort, gateway.devicePort] {
                let client = try RawH2Client(port: port)
                client.close()
            }
        }
        // Every connection was seen closing (its descriptor is gone) before the heaps are read.
        // One reading decides (a second one could catch a socket the gateway opened meanwhile for its own work).
        let deadline = ContinuousClock.now + .seconds(30)
        var sockets = ProcessProbe.sockets(gateway.pid)
        while sockets > socketsBefore, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            sockets = ProcessProbe.sockets(gateway.pid)
        }
        #expect(sockets <= socketsBefore, "connections closed: \(sockets) sockets, \(socketsBefore) before")
        let after = try await adminMetric(port: gateway.adminPort, sample)
        // Before: each closed connection left its idle, handshake and authentication timers in the heap until their
        // deadlines (an hour): about 18,000 entries here.
        #expect(after < before + 300, "\(before) timer entries before, \(after) after 6000 connections")
        #expect(gateway.terminate() == 0, "stderr: \(gateway.stderr)")
    }
}
