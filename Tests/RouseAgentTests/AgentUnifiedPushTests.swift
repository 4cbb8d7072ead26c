import Foundation
import Glibc
import InMemoryLogging
import Logging
import RouseAgent
import RouseChildProcess
import RouseClock
import RouseDBus
import RouseGateway
import RouseSystem
import RouseTestSupport
import Synchronization
import Testing

/// The agent as a UnifiedPush distributor (docs/unifiedpush.md), with real parts only: a private dbus-daemon whose
/// service directory holds the apps' `.service` files (D-Bus activation), connectors written with dbus-fast
/// (`Tests/Interop/unifiedpush_connector.py`, versions 2 and 1), a real gateway with its WebPush listener, pywebpush as
/// the application server (VAPID + aes128gcm over HTTP/1.1) and http_ece decrypting what the app received.
@Suite(.serialized, .stopsWhatItStarts, .timeLimit(.minutes(5)))
struct AgentUnifiedPushTests {
    static let app2 = "org.example.PushTwo"
    static let app1 = "org.example.PushOne"

    @Test func registerDeliverByteEqualRefuseAndUnregister() async throws {
        let lab = try await UnifiedPushLab.start(limits: { $0.perApp = 2 })
        try lab.install(Self.app2, version: 2)
        try lab.install(Self.app1, version: 1)
        let vapid = try await lab.vapidPublicKey()

        // Version 2 (chosen from the Introspect XML), with the application server's key.
        let reply = try await lab.register(Self.app2, version: 2, token: "tok-a", ["--vapid", vapid])
        #expect(reply["success"] as? String == "REGISTRATION_SUCCEEDED")
        #expect(reply["version"] as? Int == 2)
        let endpoint = try await lab.endpoint(Self.app2, token: "tok-a")
        #expect(endpoint.hasPrefix(lab.origin + "/wp/"))

        // 1 and 3993 bytes (4096 on the wire) reach the app byte-equal, each acknowledged by its reply; 3994 → 413.
        for (size, seed) in [(1, 1), (3993, 2)] {
            let sent = try await lab.send(endpoint, size: size, seed: seed)
            #expect(sent["status"] as? Int == 201)
            let received = try await lab.waitForMessage(Self.app2, count: seed)
            #expect(try await lab.decrypt(received["message"] as? String ?? "") == sent["plaintext"] as? String)
            #expect(received["token"] as? String == "tok-a")
        }
        do {
            try await eventually("acknowledged by the app's reply") { try lab.pending() == 0 }
        } catch {
            Issue.record("\(String(describing: await lab.agent.status().unifiedPush)); \(lab.agentLog.tail())")
            throw error
        }
        #expect(try await lab.send(endpoint, size: 3994, seed: 3)["status"] as? Int == 413)

        // Registering the known token again (every app start) gives the same endpoint.
        #expect(
            try await lab.register(Self.app2, version: 2, token: "tok-a", ["--vapid", vapid])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        try await eventually("the same endpoint again") {
            lab.events(Self.app2).filter { $0["call"] as? String == "NewEndpoint" }.count == 2
        }
        #expect(try await lab.endpoint(Self.app2, token: "tok-a") == endpoint)

        // Version 1: acknowledged once sent.
        let v1 = try await lab.register(Self.app1, version: 1, token: "tok-v1", [])
        #expect(v1["success"] as? String == "REGISTRATION_SUCCEEDED")
        let v1Endpoint = try await lab.endpoint(Self.app1, token: "tok-v1")
        let v1Sent = try await lab.send(v1Endpoint, size: 10, seed: 4, ["--no-vapid"])
        #expect(v1Sent["status"] as? Int == 201)
        let v1Received = try await lab.waitForMessage(Self.app1, count: 1)
        #expect(try await lab.decrypt(v1Received["message"] as? String ?? "") == v1Sent["plaintext"] as? String)
        try await eventually("the version-1 message acknowledged") { try lab.pending() == 0 }

        // Refused: a service the caller neither owns nor can activate; over the per-app cap (2). Ignored: a token over
        // 100 bytes, a VAPID key that is no P-256 point.
        let foreign = try await lab.register(
            Self.app2, version: 2, token: "tok-x", ["--service", "org.example.Nobody"])
        #expect(foreign["success"] as? String == "REGISTRATION_FAILED")
        #expect(foreign["reason"] as? String == "UNAUTHORIZED")
        #expect(
            try await lab.register(Self.app2, version: 2, token: "tok-b", [])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        let capped = try await lab.register(Self.app2, version: 2, token: "tok-c", [])
        #expect(capped["success"] as? String == "REGISTRATION_FAILED")
        #expect(capped["reason"] as? String == "ACTION_REQUIRED")
        let long = try await lab.register(Self.app2, version: 2, token: String(repeating: "t", count: 101), [])
        #expect(long["success"] == nil, "a token over 100 bytes was not ignored")
        let badKey = try await lab.register(
            Self.app2, version: 2, token: "tok-d", ["--vapid", String(vapid.dropLast())])
        #expect(badKey["success"] == nil, "a malformed VAPID key was not ignored")
        let status = try #require(await lab.agent.status().unifiedPush)
        #expect(status.refused["ACTION_REQUIRED"] == 1)
        #expect(status.refused["UNAUTHORIZED"] == 1)
        #expect(status.malformed == 2)
        #expect(status.registrations == 3)

        // Unregister: the app is told, the subscription deleted, the sender gets 410.
        let gone = try await lab.unregister(Self.app2, version: 2, token: "tok-a")
        #expect(gone["unregistered"] as? Bool == true)
        try await eventually("the subscription deleted at the gateway") {
            try await lab.send(endpoint, size: 5, seed: 5)["status"] as? Int == 410
        }
        // Version 1 (`Unregister(s)`, no reply): confirmed with an empty token.
        let v1Gone = try await lab.unregister(Self.app1, version: 1, token: "tok-v1")
        #expect(v1Gone["unregistered"] as? Bool == true)
        #expect(lab.events(Self.app1).last { $0["call"] as? String == "Unregistered" }?["token"] as? String == "")
        try await eventually("the version-1 subscription deleted") {
            try await lab.send(v1Endpoint, size: 5, seed: 6, ["--no-vapid"])["status"] as? Int == 410
        }
    }

    @Test func offlineTTLTopicAndAReplyWithoutTheIDIsOfferedAgain() async throws {
        let lab = try await UnifiedPushLab.start()
        try lab.install(Self.app2, version: 2)
        #expect(
            try await lab.register(Self.app2, version: 2, token: "tok", [])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        let endpoint = try await lab.endpoint(Self.app2, token: "tok")

        await lab.agent.reachabilityChanged(false)
        try await eventually("channel closed") { await lab.agent.status().channel != "open" }
        let dropped = try await lab.send(endpoint, size: 20, seed: 10, ["--ttl", "0", "--no-vapid"])
        #expect(dropped["status"] as? Int == 201)
        let replaced = try await lab.send(
            endpoint, size: 20, seed: 11, ["--ttl", "60", "--topic", "chat", "--no-vapid"])
        let replacing = try await lab.send(
            endpoint, size: 20, seed: 12, ["--ttl", "60", "--topic", "chat", "--no-vapid"])
        let kept = try await lab.send(endpoint, size: 20, seed: 13, ["--ttl", "60", "--no-vapid"])
        await lab.agent.reachabilityChanged(true)
        _ = try await lab.waitForMessage(Self.app2, count: 2)
        try await eventually("acknowledged") { try lab.pending() == 0 }
        var plaintexts: [String] = []
        for message in lab.events(Self.app2).filter({ $0["call"] as? String == "Message" }) {
            plaintexts.append(try await lab.decrypt(message["message"] as? String ?? ""))
        }
        #expect(plaintexts.count == 2)
        #expect(plaintexts.contains(replacing["plaintext"] as? String ?? "-"))
        #expect(plaintexts.contains(kept["plaintext"] as? String ?? "-"))
        #expect(!plaintexts.contains(replaced["plaintext"] as? String ?? "-"), "Topic did not replace")
        #expect(!plaintexts.contains(dropped["plaintext"] as? String ?? "-"), "TTL 0 was kept while offline")

        // The app answers without the id: not acknowledged; offered again on the next channel, then acknowledged.
        try "no-id".write(toFile: lab.directory + "/\(Self.app2).mode", atomically: true, encoding: .utf8)
        _ = try await lab.send(endpoint, size: 30, seed: 14, ["--no-vapid"])
        let first = try await lab.waitForMessage(Self.app2, count: 3)
        try await eventually("the failure counted") { await lab.agent.status().unifiedPush?.failed == 1 }
        #expect(try lab.pending() == 1, "a reply without the id was acknowledged")
        try FileManager.default.removeItem(atPath: lab.directory + "/\(Self.app2).mode")
        await lab.agent.reachabilityChanged(false)
        await lab.agent.reachabilityChanged(true)
        let again = try await lab.waitForMessage(Self.app2, count: 4)
        #expect(again["id"] as? String == first["id"] as? String)
        try await eventually("acknowledged the second time") { try lab.pending() == 0 }
    }

    @Test func veryLowIsWithheldOnBatteryAndDeliveredOnAC() async throws {
        let lab = try await UnifiedPushLab.start(onBattery: true)
        try lab.install(Self.app2, version: 2)
        #expect(
            try await lab.register(Self.app2, version: 2, token: "tok", [])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        let endpoint = try await lab.endpoint(Self.app2, token: "tok")
        try await eventually("the channel declares low") { await lab.agent.channelMinimumUrgency() == "low" }
        // On battery at 80 %: the minimum is `low`. In order, the very-low message would come first: the normal one
        // arriving alone shows it withheld.
        let veryLow = try await lab.send(endpoint, size: 8, seed: 20, ["--urgency", "very-low", "--no-vapid"])
        let normal = try await lab.send(endpoint, size: 8, seed: 21, ["--urgency", "normal", "--no-vapid"])
        let first = try await lab.waitForMessage(Self.app2, count: 1)
        #expect(try await lab.decrypt(first["message"] as? String ?? "") == normal["plaintext"] as? String)
        try await eventually("the normal one acknowledged") { try lab.pending() == 1 }
        #expect(lab.events(Self.app2).filter { $0["call"] as? String == "Message" }.count == 1)

        _ = try await lab.control.call(
            destination: UPower.name, path: "/org/freedesktop/UPower", interface: "org.freedesktop.DBus.Mock",
            member: "UpdateProperties",
            arguments: [.string("org.freedesktop.UPower"), .vardict([("OnBattery", .boolean(false))])])
        let second = try await lab.waitForMessage(Self.app2, count: 2)
        #expect(try await lab.decrypt(second["message"] as? String ?? "") == veryLow["plaintext"] as? String)
        try await eventually("acknowledged on AC") { try lab.pending() == 0 }
    }

    @Test func aRestartKeepsRegistrationsAndAnAppWhoseServiceFileWentIsPurged() async throws {
        let lab = try await UnifiedPushLab.start()
        try lab.install(Self.app2, version: 2)
        try lab.install(Self.app1, version: 2)
        #expect(
            try await lab.register(Self.app2, version: 2, token: "keep", [])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        #expect(
            try await lab.register(Self.app1, version: 2, token: "drop", [])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        let kept = try await lab.endpoint(Self.app2, token: "keep")
        let dropped = try await lab.endpoint(Self.app1, token: "drop")

        try await lab.restartAgent()
        #expect(await lab.agent.status().unifiedPush?.registrations == 2)
        let sent = try await lab.send(kept, size: 16, seed: 30, ["--no-vapid"])
        let received = try await lab.waitForMessage(Self.app2, count: 1)
        #expect(try await lab.decrypt(received["message"] as? String ?? "") == sent["plaintext"] as? String)
        #expect(try await lab.send(dropped, size: 16, seed: 31, ["--no-vapid"])["status"] as? Int == 201)
        _ = try await lab.waitForMessage(Self.app1, count: 1)

        // The app is removed: its .service file goes (the bus reloads its directory), it is not running.
        try FileManager.default.removeItem(atPath: lab.services + "/\(Self.app1).service")
        _ = try await lab.control.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "ReloadConfig")
        try await eventually("the app exited") { try await lab.control.nameOwner(Self.app1) == nil }
        try await lab.restartAgent()
        try await eventually("purged") { await lab.agent.status().unifiedPush?.purged == 1 }
        #expect(await lab.agent.status().unifiedPush?.registrations == 1)
        try await eventually("the sender gets 410") {
            try await lab.send(dropped, size: 16, seed: 32, ["--no-vapid"])["status"] as? Int == 410
        }
        #expect(try await lab.send(kept, size: 16, seed: 33, ["--no-vapid"])["status"] as? Int == 201)
        _ = try await lab.waitForMessage(Self.app2, count: 2)
    }
}

extension AgentUnifiedPushTests {
    /// The 30-day rule on the agent's manual clock: at `SIGHUP` an app silent for 30 days is pinged with
    /// `NewEndpoint`; it answers and stays, or fails and is unregistered (its sender gets 410).
    @Test func anAppSilentForThirtyDaysIsPingedAndDroppedWhenThePingFails() async throws {
        let clock = AgentHarness.manualClock()
        let lab = try await UnifiedPushLab.start(clock: clock)
        try lab.install(Self.app2, version: 2)
        #expect(
            try await lab.register(Self.app2, version: 2, token: "tok", [])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        let endpoint = try await lab.endpoint(Self.app2, token: "tok")
        func pings() -> Int { lab.events(Self.app2).filter { $0["call"] as? String == "NewEndpoint" }.count }
        #expect(pings() == 1)

        clock.advance(by: .seconds(29 * 86400))
        await lab.agent.reload(handlers: [])
        #expect(pings() == 1, "pinged before 30 days")

        clock.advance(by: .seconds(2 * 86400))
        await lab.agent.reload(handlers: [])
        #expect(pings() == 2, "not pinged after 30 days")
        #expect(await lab.agent.status().unifiedPush?.purged == 0)
        #expect(await lab.agent.status().unifiedPush?.registrations == 1)

        try "fail-endpoint".write(toFile: lab.directory + "/\(Self.app2).mode", atomically: true, encoding: .utf8)
        clock.advance(by: .seconds(31 * 86400))
        await lab.agent.reload(handlers: [])
        #expect(pings() == 3)
        #expect(await lab.agent.status().unifiedPush?.purged == 1)
        #expect(await lab.agent.status().unifiedPush?.registrations == 0)
        try await eventually("the sender gets 410") {
            try await lab.send(endpoint, size: 16, seed: 40, ["--no-vapid"])["status"] as? Int == 410
        }
    }
}

/// One test's world: the bus (with UPower on battery when asked), the service directory, the gateway with its
/// WebPush listener, the application server's keys, and the agent (restartable on the same state file).
final class UnifiedPushLab: Sendable {
    let lab: DBusLab
    let control: DBusConnection
    let directory: String
    let services: String
    let gateway: Gateway
    let origin: String
    let python: String
    let keys: String
    private let configuration: AgentConfiguration
    private let current: Mutex<Agent?>
    private let logger: Logger
    /// The agent's log at debug level, quoted by ``diagnosis()``.
    let agentLog = InMemoryLogHandler()

    /// The running agent (one is always running between `start` and `stop`).
    var agent: Agent {
        guard let agent = current.withLock({ $0 }) else { preconditionFailure("no agent running") }
        return agent
    }

    static func start(
        onBattery: Bool = false, clock: ManualClock? = nil, limits: (inout UnifiedPushLimits) -> Void = { _ in }
    ) async throws -> UnifiedPushLab {
        guard let scope = TestScope.current else { throw FixtureError("needs the .stopsWhatItStarts trait") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-up-\(UUID().uuidString)")
            .path
        let services = directory + "/services"
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        let lab = try await DBusLab.start(serviceDirectory: services)
        let control: DBusConnection
        if onBattery {
            control = try await lab.connect()
            try await lab.startMock(
                template: "upower", busName: UPower.name, parameters: #"{"OnBattery": true}"#, on: control)
            _ = try await control.call(
                destination: UPower.name, path: "/org/freedesktop/UPower", interface: "org.freedesktop.DBus.Mock",
                member: "SetupDisplayDevice",
                arguments: [
                    .uint32(2), .uint32(2), .double(80), .double(80), .double(100.0), .double(1.0), .int64(7200),
                    .int64(0), .boolean(true), .string("battery-good"), .uint32(1),
                ])
        } else {
            control = try await lab.connect()
        }
        var logger = Logger(label: "rouse.unifiedpush.test")
        logger.logLevel = ProcessInfo.processInfo.environment["ROUSE_TEST_LOG"] == nil ? .critical : .debug
        let port = try Self.freePort()
        let origin = "https://localhost:\(port)"
        var gatewayConfiguration = try AgentHarness.gatewayConfiguration(database: directory + "/gateway.sqlite")
        gatewayConfiguration.webPush = WebPushConfiguration(
            listener: .init(
                listen: "127.0.0.1:\(port)", certificateFile: Repository.cert("server.pem"),
                privateKeyFile: Repository.cert("server.key")),
            origin: origin)
        let gateway = try Gateway(configuration: gatewayConfiguration, logger: logger)
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(
                baseURL: "https://127.0.0.1:\(gateway.devicePort)", caFile: Repository.cert("ca.pem")),
            enrollmentSecret: try gateway.makeEnrollmentSecret(), socketPath: directory + "/agent.sock", handlers: [])
        configuration.assumeReachable = true
        configuration.backoff.maximum = .seconds(1)
        if let clock { configuration.clock = clock }
        var integration = SessionIntegration(systemBus: .address(lab.address), uid: Sys.uid)
        integration.holdUntilFirstUnlock = false
        integration.unifiedPushBus = .address(lab.address)
        limits(&integration.unifiedPushLimits)
        configuration.session = integration
        let python = try await APNsClientLibraries.python()
        let world = UnifiedPushLab(
            lab: lab, control: control, directory: directory, services: services, gateway: gateway, origin: origin,
            python: python, configuration: configuration, logger: logger)
        scope.onEnd { await world.stop() }
        try await world.startAgent()
        return world
    }

    private init(
        lab: DBusLab, control: DBusConnection, directory: String, services: String, gateway: Gateway, origin: String,
        python: String, configuration: AgentConfiguration, logger: Logger
    ) {
        self.lab = lab
        self.control = control
        self.directory = directory
        self.services = services
        self.gateway = gateway
        self.origin = origin
        self.python = python
        self.keys = directory + "/ua.json"
        self.configuration = configuration
        self.logger = logger
        self.current = Mutex(nil)
    }

    /// Starts an agent on the state file; returns once its channel is open and it owns the distributor's name.
    func startAgent() async throws {
        let agent = try Agent(
            configuration: configuration, store: JSONFileAgentStateStore(path: directory + "/state.json"),
            logger: agentLog.debugLogger())
        current.withLock { $0 = agent }
        try await agent.start()
        let clock = configuration.clock as? ManualClock
        try await eventually("channel open, distributor named", timeout: .seconds(45)) {
            let status = await agent.status()
            if status.channel == "open" && status.unifiedPush?.nameOwned == true { return true }
            // A first attempt that failed (a loaded machine) waits on the manual clock for its retry.
            if let clock, clock.sleeperCount > 0 { clock.advance(by: .seconds(1)) }
            return false
        }
    }

    func restartAgent() async throws {
        if let agent = current.withLock({ $0 }) { await agent.shutdown() }
        current.withLock { $0 = nil }
        try await startAgent()
    }

    func stop() async {
        if let agent = current.withLock({ $0 }) { await agent.shutdown() }
        current.withLock { $0 = nil }
        await gateway.shutdown(gracePeriod: .seconds(1))
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Installs app `name`: its `.service` file starts the connector in `serve` mode (exiting after 3 s without a
    /// call, or `idleSeconds`).
    func install(_ name: String, version: Int, idleSeconds: Int? = nil) throws {
        let script = Repository.root + "/Tests/Interop/unifiedpush_connector.py"
        let idle = idleSeconds.map { "/usr/bin/env UP_IDLE=\($0) " } ?? ""
        let file = """
            [D-BUS Service]
            Name=\(name)
            Exec=\(idle)/usr/bin/python3 '\(script)' serve \(name) \(version) '\(directory)'

            """
        try file.write(toFile: services + "/\(name).service", atomically: true, encoding: .utf8)
    }

    /// The connector script, run by the system python3 (Debian's dbus-fast) on the lab's bus; its last line as JSON.
    private func connector(_ arguments: [String]) async throws -> [String: Any] {
        let out = try await ChildProcess.run(
            "/usr/bin/env",
            [
                "DBUS_SESSION_BUS_ADDRESS=\(lab.address)", "/usr/bin/python3",
                Repository.root + "/Tests/Interop/unifiedpush_connector.py",
            ] + arguments, timeout: .seconds(60))
        guard out.status == 0, let line = out.stdout.split(separator: "\n").last else {
            throw FixtureError("unifiedpush_connector.py \(arguments.first ?? ""): exit \(out.status) \(out.stderr)")
        }
        return try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
    }

    /// App `name` registers `token` itself (owning its name); the reply.
    func register(_ name: String, version: Int, token: String, _ options: [String]) async throws -> [String: Any] {
        try await connector(["register", name, String(version), directory, token] + options)
    }

    func unregister(_ name: String, version: Int, token: String) async throws -> [String: Any] {
        try await connector(["unregister", name, String(version), directory, token])
    }

    /// The calls app `name` received, oldest first.
    func events(_ name: String) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: directory + "/\(name).events", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The endpoint the last `NewEndpoint` for `token` handed app `name`.
    func endpoint(_ name: String, token: String) async throws -> String {
        @Sendable func last() -> String? {
            events(name).last { $0["call"] as? String == "NewEndpoint" && $0["token"] as? String == token }?[
                "endpoint"] as? String
        }
        try await eventually("NewEndpoint for \(token)") { last() != nil }
        return last() ?? ""
    }

    /// The `count`-th `Message` app `name` received.
    func waitForMessage(_ name: String, count: Int) async throws -> [String: Any] {
        @Sendable func messages() -> [[String: Any]] { events(name).filter { $0["call"] as? String == "Message" } }
        try await eventually("message \(count) for \(name)", timeout: .seconds(30)) { messages().count >= count }
        return messages()[count - 1]
    }

    func vapidPublicKey() async throws -> String { try await webPushApp(["keys", keys]) }

    /// pywebpush sends `size` seeded bytes to `endpoint`: `status`, `headers`, `plaintext` (base64).
    func send(_ endpoint: String, size: Int, seed: Int, _ options: [String] = []) async throws -> [String: Any] {
        if !FileManager.default.fileExists(atPath: keys) { _ = try await vapidPublicKey() }
        let line = try await webPushApp(
            ["send", keys, endpoint, Repository.cert("ca.pem"), String(size), String(seed)] + options)
        return try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
    }

    /// http_ece's plaintext (base64) of a body the app received (base64).
    func decrypt(_ body: String) async throws -> String {
        let raw = Data(base64Encoded: body) ?? Data()
        return try await webPushApp(["decrypt", keys, raw.base64EncodedString()])
    }

    private func webPushApp(_ arguments: [String]) async throws -> String {
        let out = try await ChildProcess.run(
            python, [Repository.root + "/Tests/Interop/webpush_app.py"] + arguments, timeout: .seconds(60))
        guard out.status == 0, let line = out.stdout.split(separator: "\n").last else {
            throw FixtureError("webpush_app.py \(arguments.first ?? ""): exit \(out.status) \(out.stderr)")
        }
        return String(line)
    }

    /// Messages the gateway holds unacknowledged.
    func pending() throws -> Int { try AgentHarness.pending(gateway) }

    /// A port free now (the origin names it, so it must be known before the gateway starts).
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket: \(errno)") }
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw FixtureError("bind: \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }
}
