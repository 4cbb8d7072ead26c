import Foundation
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Testing

/// The gateway's listeners face the internet: connection caps, budgets and their metrics.
@Suite("Gateway in public: connection caps and budget metrics", .timeLimit(.minutes(2)))
struct PublicLimitsTests {
    @Test("a flood of bogus device bearers does not turn provider pushes into 503s; the device budget counts it")
    func bogusBearerFlood() async throws {
        let h = try await Harness.start {
            // Below the 128 device requests the flood can have waiting (8 connections × 16 streams): one shared queue
            // budget would fill with them and refuse provider pushes.
            $0.limits.maxQueuedJobs = 32
            $0.limits.maxQueuedDeviceRequests = 16
        }
        let body = h.directory.path + "/body.json"
        try Data(#"{"aps":{"alert":"x"}}"#.utf8).write(to: URL(fileURLWithPath: body))
        let bogus = "authorization: Bearer d0123456789abcdef." + String(repeating: "0", count: 64)
        async let flood = ChildProcess.run(
            "/usr/bin/h2load",
            [
                "-n", "20000", "-c", "8", "-m", "100", "-H", bogus,
                "https://127.0.0.1:\(h.gateway.devicePort)/device/v1/tokens",
            ], timeout: .seconds(60))
        async let pushes = ChildProcess.run(
            "/usr/bin/h2load",
            [
                "-n", "2000", "-c", "1", "-m", "1", "-d", body, "-H", "authorization: bearer \(h.provider.jwt)",
                "-H", "apns-topic: \(GatewayFixture.bundleID)", "-H", "apns-push-type: alert",
                "https://127.0.0.1:\(h.gateway.providerPort)/3/device/\(h.token)",
            ], timeout: .seconds(60))
        let (floodOut, pushOut) = try await (flood, pushes)
        let refused = h.gateway.metrics.total("limit/device/device-queue-full")
        await h.stop()
        #expect(pushOut.stdout.contains("status codes: 2000 2xx, 0 3xx, 0 4xx, 0 5xx"), "\(pushOut.stdout)")
        #expect(floodOut.stdout.contains("20000 done"), "\(floodOut.stdout)")
        #expect(refused > 0, "the flood met the device budget")
    }

    @Test("out of descriptors (prlimit): the listener pauses instead of spinning, and serves again afterwards")
    func descriptorExhaustion() async throws {
        let directory = try TemporaryDirectory()
        let gateway = try await GatewayProcess.start(directory: directory, database: directory.path + "/g.sqlite")
        defer { gateway.kill() }
        let limited = try await ChildProcess.run("/usr/bin/prlimit", ["--pid", "\(gateway.pid)", "--nofile=64:64"])
        #expect(limited.status == 0, "\(limited.stderr)")
        // More connections than descriptors: the kernel queues the rest, and accept4 fails with EMFILE.
        var held: [RawH2Client] = []
        for _ in 0..<120 { held.append(try RawH2Client(port: gateway.devicePort, receiveTimeout: .seconds(1))) }
        try await Task.sleep(for: .milliseconds(300))
        let ticksPerSecond = ProcessProbe.ticksPerSecond
        let before = try #require(ProcessProbe.cpuTicks(gateway.pid))
        try await Task.sleep(for: .seconds(3))
        let used = try #require(ProcessProbe.cpuTicks(gateway.pid)) - before
        // A level-triggered listener spinning on EMFILE burns a whole core: 3 s of CPU here.
        #expect(used < ticksPerSecond / 2, "\(used) ticks of CPU in 3 s while out of descriptors")
        held.removeAll()
        // Descriptors free again: a provider connects and pushes.
        let provider = try await Provider.connect(port: gateway.providerPort)
        let answer = await provider.push(token: "0b" + String(repeating: "ad", count: 31))
        #expect(answer.status == 400 && answer.reason == "BadDeviceToken", "\(answer)")
        provider.close()
    }

    @Test("a connection flood on the device port stops at the per-address cap; providers still push; metrics show it")
    func deviceConnectionFlood() async throws {
        let h = try await Harness.start { $0.limits.maxConnectionsPerAddress = 20 }
        // The harness's device client may hold a connection of its own: fill what is left of the cap. Refused
        // connections are closed at accept (end of file at once); admitted ones wait for a TLS handshake (our read
        // times out). Blocking reads, on a thread of their own.
        let port = h.gateway.devicePort
        var (held, refused) = try await offPool { () throws -> ([RawH2Client], Int) in
            let held = try (0..<30).map { _ in try RawH2Client(port: port, receiveTimeout: .milliseconds(300)) }
            var refused = 0
            for client in held {
                do {
                    if try client.readFrame() == nil { refused += 1 }
                } catch {}
            }
            return (held, refused)
        }
        #expect(refused >= 10, "\(refused) of 30 refused")
        await h.push(1)
        let counts = h.gateway.limitCounts.device
        #expect(counts.connectionsRefusedPerAddress == UInt64(refused))
        let metric = try await adminMetric(
            port: h.gateway.adminPort, limitHits("device", "connections-refused-per-address"))
        #expect(metric == refused)
        held.removeAll()
        await h.stop()
    }
}
