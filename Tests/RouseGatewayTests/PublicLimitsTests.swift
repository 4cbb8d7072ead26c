import Foundation
import RouseHTTP2
import RouseTestSupport
import Testing

/// The gateway's listeners face the internet: connection caps, budgets and their metrics.
/// CPU time (user + system) of process `pid` in clock ticks, from /proc/PID/stat.
private func cpuTicks(_ pid: pid_t) throws -> Int {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // Fields after the command's closing parenthesis; utime and stime are fields 14 and 15.
    guard let close = stat.lastIndex(of: ")") else { throw FixtureError("unreadable /proc/\(pid)/stat") }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else {
        throw FixtureError("unreadable /proc/\(pid)/stat: \(stat)")
    }
    return user + system
}

@Suite("Gateway in public: connection caps and budget metrics", .timeLimit(.minutes(2)))
struct PublicLimitsTests {
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
        let ticksPerSecond = sysconf(Int32(_SC_CLK_TCK))
        let before = try cpuTicks(gateway.pid)
        try await Task.sleep(for: .seconds(3))
        let used = try cpuTicks(gateway.pid) - before
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
        // The harness's device client may hold a connection of its own: fill what is left of the cap.
        var held: [RawH2Client] = []
        var refused = 0
        for _ in 0..<30 {
            let client = try RawH2Client(port: h.gateway.devicePort, receiveTimeout: .milliseconds(300))
            held.append(client)
        }
        // Refused connections are closed at accept (end of file at once); admitted ones wait for a TLS handshake
        // (our read times out).
        for client in held {
            do {
                if try client.readFrame() == nil { refused += 1 }
            } catch {}
        }
        #expect(refused >= 10, "\(refused) of 30 refused")
        await h.push(1)
        let counts = h.gateway.limitCounts.device
        #expect(counts.connectionsRefusedPerAddress == UInt64(refused))
        let port = try #require(h.gateway.adminPort)
        let admin = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil), on: providerLoop)
        let response = await admin.send(
            HTTP2ClientRequest(method: "GET", path: "/metrics", authority: "localhost", scheme: "http"))
        guard case .response(200, _, let body) = response else {
            Issue.record("metrics: \(response)")
            return
        }
        let metrics = String(decoding: body, as: UTF8.self)
        #expect(
            metrics.contains(
                #"rouse_gateway_limit_hits_total{listener="device",limit="connections-refused-per-address"} \#(refused)"#
            ),
            "\(metrics)")
        admin.close()
        held.removeAll()
        await h.stop()
    }
}
