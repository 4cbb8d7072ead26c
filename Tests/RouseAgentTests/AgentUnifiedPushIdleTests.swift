import Foundation
import Glibc
import Logging
import RouseAgent
import RouseChildProcess
import RouseDBus
import RouseGateway
import RouseTestSupport
import Testing

/// Registrations cost no wake-ups: a `rouse-agent --user` process distributing for 20 UnifiedPush apps sleeps as
/// one distributing for none (issue 28). Its wake-ups are counted as in ``AgentIdleTests`` (voluntary context
/// switches of all its threads over 10 s after it went quiet), once with no registration and once with 20, on a
/// private dbus-daemon whose service directory holds the 20 apps' `.service` files (the connector of
/// `Tests/Interop/unifiedpush_connector.py`). A distributor that polled per registration, or pinged the apps on a
/// timer, wakes at least 20 times in the window.
@Suite("UnifiedPush registrations cost no wake-ups", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(4)))
struct AgentUnifiedPushIdleTests {
    @Test func twentyRegisteredAppsWakeTheIdleAgentNoMoreThanNone() async throws {
        let (directory, gateway) = try Self.gatewayWithWebPush()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let services = directory + "/services"
        let runtime = directory + "/run"
        for path in [services, runtime, directory + "/handlers", directory + "/home"] {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let lab = try await DBusLab.start(serviceDirectory: services)
        // The session's bus is the lab's; logind is absent (no lock to follow: nothing that wakes).
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            arguments: [
                "--user", "--systemctl", "/bin/false", "--system-bus-address", lab.address,
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
            ],
            environment: [
                "HOME": directory + "/home", "XDG_RUNTIME_DIR": runtime, "DBUS_SESSION_BUS_ADDRESS": lab.address,
            ],
            stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        try await eventually("channel open, distributor named", timeout: .seconds(45)) {
            let status = try? await AgentNetworkTests.status(socket: socket)
            return status?.channel == "open" && status?.unifiedPush?.nameOwned == true
        }
        let pid = agent.process.processIdentifier
        let none = try await Self.wakeUps(pid)

        let script = Repository.root + "/Tests/Interop/unifiedpush_connector.py"
        let apps = (1...20).map { "org.example.Idle\($0)" }
        for app in apps {
            let file = """
                [D-BUS Service]
                Name=\(app)
                Exec=/usr/bin/python3 '\(script)' serve \(app) 2 '\(directory)'

                """
            try file.write(toFile: services + "/\(app).service", atomically: true, encoding: .utf8)
        }
        for app in apps {
            let out = try await ChildProcess.run(
                "/usr/bin/env",
                [
                    "DBUS_SESSION_BUS_ADDRESS=\(lab.address)", "/usr/bin/python3", script, "register", app, "2",
                    directory, "tok-\(app)",
                ], timeout: .seconds(60))
            #expect(out.status == 0 && out.stdout.contains("REGISTRATION_SUCCEEDED"), "\(app): \(out.stdout)")
        }
        try await eventually("20 registrations") {
            (try? await AgentNetworkTests.status(socket: socket))?.unifiedPush?.registrations == 20
        }
        // The apps the distributor activated (NewEndpoint) are their own processes; the agent's count is its own.
        let twenty = try await Self.wakeUps(pid)
        #expect(none.total <= 1, "no registration: wake-ups in 10 s by thread: \(none.threads)")
        #expect(twenty.total <= max(none.total, 1), "20 registrations: \(twenty.threads); none: \(none.threads)")
    }

    /// Waits until `pid` went quiet (6 s without a wake-up, what the set-up armed settled), then counts its wake-ups
    /// over 10 s.
    static func wakeUps(_ pid: Int32) async throws -> (total: Int, threads: [(String, Int)]) {
        guard try await ProcessProbe.settle(pid, quiet: .seconds(6), limit: .seconds(60)) else {
            throw FixtureError("the agent never went quiet")
        }
        let before = AgentIdleTests.switches(pid: pid)
        try await Task.sleep(for: .seconds(10))
        let after = AgentIdleTests.switches(pid: pid)
        let woke = after.map { ($0.key, $0.value - (before[$0.key] ?? 0)) }.filter { $0.1 > 0 }.sorted { $0.1 > $1.1 }
        return (woke.reduce(0) { $0 + $1.1 }, woke)
    }

    /// A quiet gateway (no heartbeat) with its WebPush listener: registrations need it for their endpoints.
    static func gatewayWithWebPush() throws -> (directory: String, gateway: Gateway) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-up-idle-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var logger = Logger(label: "rouse.gateway.test")
        logger.logLevel = .critical
        let port = try UnifiedPushLab.freePort()
        var configuration = try AgentHarness.gatewayConfiguration(database: directory + "/gateway.sqlite")
        configuration.webPush = WebPushConfiguration(
            listener: .init(
                listen: "127.0.0.1:\(port)", certificateFile: Repository.cert("server.pem"),
                privateKeyFile: Repository.cert("server.key")),
            origin: "https://localhost:\(port)")
        return (directory, try Gateway(configuration: configuration, logger: logger))
    }
}
