import Foundation
import InMemoryLogging
import Logging
import RouseAPNs
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseClock
import RouseEventLoop
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Synchronization
import Testing

extension InMemoryLogHandler {
    /// A logger at debug level into this handler (and to standard error too with `ROUSE_TEST_LOG` set): an
    /// in-process agent's log, kept for a failure message.
    func debugLogger(label: String = "rouse.agent.test") -> Logger {
        let verbose = ProcessInfo.processInfo.environment["ROUSE_TEST_LOG"] != nil
        var logger = Logger(label: label) { label in
            verbose
                ? MultiplexLogHandler([self, StreamLogHandler.standardError(label: label)]) : self as any LogHandler
        }
        logger.logLevel = .debug
        return logger
    }

    /// The log's last `count` entries, one per line, for a failure message.
    func tail(_ count: Int = 40) -> String {
        let lines = entries.suffix(count).map { entry in
            let metadata = entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            return "\(entry.level) \(entry.message) \(metadata.joined(separator: " "))"
        }
        return "agent log (last \(lines.count)):\n  " + lines.joined(separator: "\n  ")
    }
}

/// One shared client event loop for provider connections.
let providerLoop: EventLoop = {
    guard let loop = try? EventLoop(name: "agent-test-provider") else { fatalError("cannot create an event loop") }
    loop.start()
    return loop
}()

/// A provider on one HTTP/2 connection with a JWT from certs/apns-key.p8.
struct Provider: Sendable {
    let client: HTTP2Client
    let jwt: String

    static func connect(port: UInt16) async throws -> Provider {
        var tls = TLSConfiguration()
        tls.trustRootsFile = Repository.cert("ca.pem")
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: tls), on: providerLoop)
        let pem = try String(contentsOfFile: Repository.cert("apns-key.p8"), encoding: .utf8)
        let jwt = try ProviderToken(
            keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: Gateway.systemMilliseconds() / 1000
        ).signed(with: ProviderToken.privateKey(pem: pem))
        return Provider(client: client, jwt: jwt)
    }

    /// Sends a push; returns the HTTP status.
    func push(token: String, topic: String, type: String, payload: String, apnsID: String? = nil) async -> Int {
        var headers = [HTTP2Header("authorization", "bearer \(jwt)", neverIndex: true)]
        if let apnsID { headers.append(HTTP2Header("apns-id", apnsID)) }
        headers.append(HTTP2Header("apns-topic", topic))
        headers.append(HTTP2Header("apns-push-type", type))
        if type == "background" { headers.append(HTTP2Header("apns-priority", "5")) }
        let request = HTTP2ClientRequest(
            path: "/3/device/\(token)", authority: "localhost", headers: headers, body: Array(payload.utf8))
        switch await client.send(request) {
        case .response(let status, _, _): return status
        default: return -1
        }
    }
}

/// Gateway (in this process) + agent (in this process) + handlers launched as real processes.
///
/// Stopped when the test ends, passed or failed: its suite must have the `.stopsWhatItStarts` trait, whose scope
/// awaits `stop()` and then kills any handler process still carrying the scope's tag.
final class AgentHarness: Sendable {
    static let bundleID = "com.example.rouse"
    let directory: String
    let gateway: Gateway
    let agent: Agent
    let provider: Provider
    let socketPath: String
    /// The agent's clock when the test gave it a manual one (`configuration.clock = ManualClock(…)`): the test moves
    /// it with ``advance(by:)``.
    let clock: ManualClock?
    /// The in-process agent's log at debug level, kept in memory: a wait that times out quotes its end (what the
    /// agent did, or did not do, for the handler waited on).
    let agentLog = InMemoryLogHandler()
    /// The stop under way (`stop()` runs once, however many callers ask for it).
    private let stopping = Mutex<Task<Void, Never>?>(nil)

    /// A fresh temporary directory (with `handlers/`) and a gateway on its SQLite file, logging only criticals.
    /// The caller removes the directory and shuts the gateway down.
    static func quietGatewayInTemporaryDirectory() throws -> (directory: String, gateway: Gateway) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-agent-\(UUID().uuidString)"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory + "/handlers", withIntermediateDirectories: true)
        var logger = Logger(label: "rouse.gateway.test")
        logger.logLevel = .critical
        let gateway = try Gateway(
            configuration: try gatewayConfiguration(database: directory + "/gateway.sqlite"), logger: logger)
        return (directory, gateway)
    }

    static func gatewayConfiguration(database: String) throws -> GatewayConfiguration {
        let listener = GatewayConfiguration.Listener(
            listen: "127.0.0.1:0", certificateFile: Repository.cert("server.pem"),
            privateKeyFile: Repository.cert("server.key"), clientCAFile: Repository.cert("ca.pem"))
        var configuration = GatewayConfiguration(
            provider: listener, device: listener, admin: GatewayConfiguration.Listener(listen: "127.0.0.1:0"),
            databasePath: database)
        let pem = try String(contentsOfFile: Repository.cert("apns-key.pub.pem"), encoding: .utf8)
        configuration.keys = [
            GatewayConfiguration.Key(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", publicKeyPEM: pem, topics: ["*"])
        ]
        configuration.providerCertificateTopics = ["*"]
        configuration.limits.heartbeatSeconds = 0
        // The test provider connects once and may push first minutes later on a loaded machine (it does not reconnect
        // after a GOAWAY as a real client does).
        configuration.limits.authenticationTimeoutSeconds = 600
        return configuration
    }

    /// A handler running the example handler in `mode`, logging to `<directory>/<name>.log`.
    static func handler(
        _ name: String, mode: String, directory: String, pushTypes: [String] = ["voip", "background"],
        arguments: [String] = [], configure: (inout HandlerRules) -> Void = { _ in }
    ) throws -> HandlerConfiguration {
        var rules = HandlerRules()
        rules.voipDeadline = .seconds(1)
        rules.backgroundDeadline = .seconds(1)
        rules.suspendAfter = .milliseconds(300)
        configure(&rules)
        return HandlerConfiguration(
            name: name, topic: name == "voip" ? bundleID : "com.example.\(name)",
            command: [try Products.path("rouse-example-handler"), "--mode", mode, "--log", "\(directory)/\(name).log"]
                + arguments,
            // The rules tests run the handler as the (root) test process; who handlers run as by default, and
            // what they are given, is AgentPrivilegeTests' subject.
            pushTypes: pushTypes, allowRoot: true, rules: rules)
    }

    init(
        handlers: (String) throws -> [HandlerConfiguration],
        configure: (_ directory: String, inout AgentConfiguration) throws -> Void = { _, _ in },
        store: (_ path: String) -> any AgentStateStore = { JSONFileAgentStateStore(path: $0) }
    ) async throws {
        guard let scope = TestScope.current else {
            throw FixtureError(
                "AgentHarness needs its suite to have the .stopsWhatItStarts trait (it stops the harness)")
        }
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("rouse-agent-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var gatewayLogger = Logger(label: "rouse.gateway.test")
        let verbose = ProcessInfo.processInfo.environment["ROUSE_TEST_LOG"] != nil
        gatewayLogger.logLevel = verbose ? .debug : .critical
        let gateway = try Gateway(
            configuration: try Self.gatewayConfiguration(database: directory + "/gateway.sqlite"),
            logger: gatewayLogger)
        self.gateway = gateway
        socketPath = directory + "/agent.sock"
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(
                baseURL: "https://127.0.0.1:\(gateway.devicePort)", caFile: Repository.cert("ca.pem")),
            enrollmentSecret: try gateway.makeEnrollmentSecret(), socketPath: socketPath,
            handlers: try handlers(directory))
        configuration.assumeReachable = true
        // A loaded machine may fail a first attempt: retry within a second, not a minute.
        configuration.backoff.maximum = .seconds(1)
        // The handlers this agent launches are the test's: tagged, so its scope can kill them.
        configuration.handlerEnvironment.merge(scope.environment) { $1 }
        try configure(directory, &configuration)
        let clock = configuration.clock as? ManualClock
        self.clock = clock
        let logger = agentLog.debugLogger()
        let agent = try Agent(
            configuration: configuration, store: store(directory + "/state.json"),
            logger: logger)
        self.agent = agent
        let directory = directory
        let retryStep = configuration.backoff.maximum
        do {
            try await agent.start()
            provider = try await Provider.connect(port: gateway.providerPort)
            // Generous: the whole suite runs in parallel on two cores, and enrollment retries back off.
            try await eventually("channel open and tokens fetched", timeout: .seconds(45)) {
                let status = await agent.status()
                let tokens = await agent.tokens()
                if status.channel == "open" && !tokens.isEmpty { return true }
                // A manual clock moves only when told: a first attempt that failed (a loaded machine) waits on it
                // for its retry (enrollment, channel and token backoff, at most a second here).
                if let clock, clock.sleeperCount > 0 { clock.advance(by: retryStep) }
                return false
            }
        } catch {
            await agent.shutdown()
            await gateway.shutdown(gracePeriod: .seconds(1))
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        scope.onEnd { await self.stop() }
    }

    /// A manual clock for the agent whose wall time is the machine's now (the gateway stamps pushes with the
    /// machine's wall clock).
    static func manualClock() -> ManualClock { ManualClock(wallMilliseconds: SystemClock().wallMilliseconds) }

    /// Moves the agent's manual clock forward by `duration`, then waits until the timers that came due have run: what
    /// the test checks next is what they did (or that they did nothing).
    func advance(by duration: Duration) async throws {
        guard let clock else { throw FixtureError("advance(by:) needs the agent on a manual clock") }
        clock.advance(by: duration)
        await agent.settleTimers()
    }

    /// Waits for `condition`, moving the agent's manual clock forward by `step` before each look (for what waits on
    /// the clock, as the 100 ms batch of acknowledgements does).
    func waitAdvancingClock(
        _ what: String, by step: Duration, _ condition: @Sendable () async throws -> Bool
    ) async throws {
        guard let clock else { throw FixtureError("waitAdvancingClock needs the agent on a manual clock") }
        try await eventually(what) {
            clock.advance(by: step)
            return try await condition()
        }
    }

    /// The token of `topic`.
    func token(_ topic: String) async throws -> String {
        guard let token = await agent.tokens()[topic] else { throw FixtureError("no token for \(topic)") }
        return token
    }

    /// Sends a push for handler `name`'s topic.
    func push(_ name: String, type: String, payload: String = #"{"n":1}"#, apnsID: String? = nil) async throws {
        let topic = (name == "voip" ? Self.bundleID : "com.example.\(name)") + (type == "voip" ? ".voip" : "")
        let status = await provider.push(
            token: try await token(topic), topic: topic, type: type, payload: payload, apnsID: apnsID)
        guard status == 200 else { throw FixtureError("provider got \(status)") }
    }

    /// Lines the handler wrote.
    func log(_ name: String) -> [String] {
        ((try? String(contentsOfFile: "\(directory)/\(name).log", encoding: .utf8)) ?? "").split(separator: "\n")
            .map(String.init)
    }

    /// Waits for a handler log line starting with `prefix` (the `count`-th one).
    func waitForLine(_ name: String, _ prefix: String, count: Int = 1, timeout: Duration = .seconds(10)) async throws {
        do {
            try await eventually("\(name) log line '\(prefix)' ×\(count)", timeout: timeout) {
                self.log(name).filter { $0.hasPrefix(prefix) }.count >= count
            }
        } catch let error as FixtureError {
            throw FixtureError("\(error); log: \(log(name)); \(await diagnosis(name))")
        }
    }

    /// What the agent knows of handler `name` and the end of its log, for a failure message.
    func diagnosis(_ name: String) async -> String {
        let status = await handlerStatus(name).map { String(describing: $0) } ?? "no status"
        return "status: \(status); \(agentLog.tail())"
    }

    /// Unacknowledged pushes at the gateway.
    func pending() throws -> Int { try Self.pending(gateway) }

    static func pending(_ gateway: Gateway) throws -> Int {
        try gateway.store.read { try $0.pendingList(deviceID: nil as String?, limit: 1000) }.count
    }

    /// Sends an admin request and expects `ok`.
    func admin(_ message: AgentRequest) async throws {
        let client = try AgentClient(socketPath: socketPath)
        defer { client.close() }
        try client.send(message)
        var reply: AgentEvent?
        for await answer in client.messages {
            reply = answer
            break
        }
        guard case .ok = reply else { throw FixtureError("admin \(message.type): \(String(describing: reply))") }
    }

    /// What the gateway's admin view (`/v1/devices`) shows of the agent's handler for `topic`.
    func gatewayHandler(_ topic: String = bundleID) async throws -> [String: Any]? {
        guard let port = gateway.adminPort else { throw FixtureError("no admin endpoint") }
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil), on: providerLoop)
        defer { client.close() }
        let answer = await client.send(
            HTTP2ClientRequest(method: "GET", path: "/v1/devices", authority: "localhost", scheme: "http"))
        guard case .response(200, _, let body) = answer else { throw FixtureError("/v1/devices: \(answer)") }
        let devices = try JSONSerialization.jsonObject(with: Data(body)) as? [[String: Any]] ?? []
        let handlers = devices.first?["handlers"] as? [[String: Any]] ?? []
        return handlers.first { $0["topic"] as? String == topic }
    }

    func handlerStatus(_ name: String) async -> AgentStatus.Handler? {
        await agent.status().handlers.first { $0.name == name }
    }

    /// Stops the agent (it terminates its handlers) and the gateway, and removes the directory; once.
    func stop() async {
        let task = stopping.withLock { stopping in
            if let stopping { return stopping }
            let task = Task { [self] in
                provider.client.close()
                await agent.shutdown()
                await gateway.shutdown(gracePeriod: .seconds(1))
                try? FileManager.default.removeItem(atPath: directory)
            }
            stopping = task
            return task
        }
        await task.value
    }
}
