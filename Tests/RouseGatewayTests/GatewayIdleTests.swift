import Foundation
import RouseCurl
import RouseGateway
import RouseTestSupport
import RouseWire
import Testing

/// The gateway's idle side: a `rouse-gateway` with one device channel open and nothing to do sleeps. Its
/// wake-ups are the voluntary context switches of all its threads (`/proc/PID/task/*/status`), counted over a window
/// in which no heartbeat or sweep is due. Before the window every part that could leave something periodic behind
/// has run once: enrollment and token (device listener, store thread), a provider push delivered on the channel
/// (provider listener), the device's ack, and an admin request (the admin job thread).
@Suite("An idle rouse-gateway sleeps", .serialized, .timeLimit(.minutes(2)))
struct GatewayIdleTests {
    @Test("with a channel open, a push delivered and an admin request answered: at most 1 wake-up in 10 s")
    func anIdleGatewayWakesOnlyForItsTimers() async throws {
        let directory = try TemporaryDirectory()
        let database = directory.path + "/g.sqlite"
        // Heartbeats off (the fixture's default) and sweeps an hour apart: nothing is due in the window. Each
        // connection's request deadline is checked once, `requestTimeoutSeconds` after its first request (1 s here,
        // so the set-up's checks are over before the quiet period below ends).
        let gateway = try await GatewayProcess.start(
            directory: directory, database: database,
            limits: ["sweepIntervalSeconds": 3600, "requestTimeoutSeconds": 1])
        defer { gateway.kill() }
        let store = try SQLiteGatewayStore(path: database)
        let secret = try Gateway.makeEnrollmentSecret(
            store: store, now: Gateway.systemMilliseconds(), validity: .seconds(600))
        let curl = try CurlHTTPClient()
        let device = try await DeviceClient.enroll(curl: curl, port: gateway.devicePort, secret: secret)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let channel = try await device.channel()
        #expect(try await channel.next().type == "hello")
        let provider = try await Provider.connect(port: gateway.providerPort)
        #expect(await provider.push(token: token, payload: #"{"n":1}"#).status == 200)
        let id = try await channel.nextPush().id
        #expect(try await device.ack([id]).acked == 1)
        provider.close()
        #expect(try await adminMetric(port: gateway.adminPort, "rouse_gateway_acks_total") == 1)

        // Quiet means 4 s without a single wake-up (what the set-up caused, e.g. the provider connection's close,
        // has passed); a gateway woken every second by libdispatch's worker-pool monitor never gets there.
        guard try await ProcessProbe.settle(gateway.pid, quiet: .seconds(4), limit: .seconds(30)) else {
            let woke = try await Self.byThread(gateway.pid, over: .seconds(5))
            throw FixtureError("the gateway never went quiet; wake-ups in 5 s by thread: \(woke)")
        }
        let before = ProcessProbe.threads(gateway.pid)
        try await Task.sleep(for: .seconds(10))
        let woke = Self.growth(from: before, to: ProcessProbe.threads(gateway.pid))
        #expect(woke.reduce(0) { $0 + $1.1 } <= 1, "wake-ups in 10 s by thread: \(woke)")

        try await channel.expectNoPush(within: .milliseconds(100))
        channel.close()
        await curl.shutdown()
        #expect(gateway.terminate() == 0, "graceful exit on SIGTERM; stderr: \(gateway.stderr)")
    }

    /// Wake-ups by thread (name/tid) between two readings, the threads that woke only.
    static func growth(
        from before: [String: ProcessProbe.ThreadSwitches], to after: [String: ProcessProbe.ThreadSwitches]
    ) -> [(String, Int)] {
        after.map { ("\($0.value.name)/\($0.key)", $0.value.voluntary - (before[$0.key]?.voluntary ?? 0)) }
            .filter { $0.1 > 0 }.sorted { $0.1 > $1.1 }
    }

    /// Wake-ups by thread over `window` (for the failure message).
    static func byThread(_ pid: pid_t, over window: Duration) async throws -> [(String, Int)] {
        let before = ProcessProbe.threads(pid)
        try await Task.sleep(for: window)
        return growth(from: before, to: ProcessProbe.threads(pid))
    }
}
