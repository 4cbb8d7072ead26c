import Foundation
import Logging
import RouseAPNs
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseClock
import RouseEventLoop
import RouseGateway
import RouseHTTP2

/// `rouse-bench agent`: push → handler latency (provider request → the example handler has the payload) for a
/// running and for a launched handler (p50/p99); network-back → channel-open time; the agent's idle wakeups per
/// minute (voluntary context switches of all its threads, `/proc/PID/task/*/status`) and RSS with 10 registered
/// handlers.
enum AgentBench {
    struct Options {
        var samples = 200
        var launchSamples = 20
        var reconnects = 20
        var idleSeconds = 30
        var json = false
        /// Connect the agent to a private D-Bus with a logind stand-in (`AgentBench+Session.swift`).
        var sessionBus = false
    }

    static let usage = """
        usage: rouse-bench agent [--samples N] [--launch-samples N] [--reconnects N] [--idle-seconds N] [--session-bus] [--json]
               rouse-bench agent --memory-pressure [--trigger 'some STALL_US WINDOW_US'] [--json]
        """

    static func run(arguments: [String]) async throws {
        if arguments.contains("--memory-pressure") {
            try await runMemoryPressure(arguments: arguments)
            return
        }
        var options = Options()
        var index = 0
        while index < arguments.count {
            let name = arguments[index]
            func value() throws -> Int {
                guard index + 1 < arguments.count, let number = Int(arguments[index + 1]) else {
                    throw GatewayBench.BenchError(description: "\(name) needs a number\n\(usage)")
                }
                index += 1
                return number
            }
            switch name {
            case "--samples": options.samples = try value()
            case "--launch-samples": options.launchSamples = try value()
            case "--reconnects": options.reconnects = try value()
            case "--idle-seconds": options.idleSeconds = try value()
            case "--json": options.json = true
            case "--session-bus": options.sessionBus = true
            default: throw GatewayBench.BenchError(description: usage)
            }
            index += 1
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-agent-bench-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory + "/handlers", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certs = try GatewayBench.certsDirectory()
        let database = directory + "/bench.sqlite"
        let store = try SQLiteGatewayStore(path: database)
        let now = Gateway.systemMilliseconds()
        let secrets = try (0..<2).map { _ in
            try Gateway.makeEnrollmentSecret(store: store, now: now, validity: .seconds(3600))
        }
        let gateway = try await ChildGateway.start(
            executable: try GatewayBench.sibling("rouse-gateway"), directory: directory, database: database,
            certs: certs,
            // The channel's keepalive as deployed (240 s), for the idle figures.
            limits: ChildGateway.benchLimits.replacingOccurrences(
                of: #""heartbeatSeconds": 0"#, with: #""heartbeatSeconds": 240"#),
            // The ten handlers' topics (com.example.h0 … h9).
            keyTopics: #"["*"]"#)
        defer { gateway.stop() }

        var results: [(String, String)] = []
        func report(_ name: String, _ value: String) {
            results.append((name, value))
            if !options.json { print("\(name): \(value)") }
        }
        report("machine", GatewayBench.machine())

        // Ten handlers: h0 stays running (never suspended), h1 is launched for each push, h2…h9 idle.
        let example = try GatewayBench.sibling("rouse-example-handler")
        for n in 0..<10 {
            let log = "\(directory)/h\(n).log"
            let limits = n == 0 ? "[limits]\nsuspend-after-seconds = 3600\n" : ""
            let file = """
                topic = "com.example.h\(n)"
                command = ["\(example)", "--mode", "report", "--log", "\(log)"]
                push-types = ["voip"]
                allow-root = true
                \(limits)
                """
            try Data(file.utf8).write(to: URL(fileURLWithPath: "\(directory)/handlers/h\(n).toml"))
        }
        let socket = directory + "/agent.sock"
        let sessionBus = options.sessionBus ? try await BenchSessionBus.start(directory: directory) : nil
        defer { sessionBus?.stop() }
        let agent = try ChildProcess.start(
            try GatewayBench.sibling("rouse-agent"),
            [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", certs + "/ca.pem", "--enroll-secret",
                secrets[0], "--handlers", directory + "/handlers", "--state-dir", directory + "/state", "--socket",
                socket, "--assume-reachable", "--log-level", "error",
            ] + (sessionBus?.agentArguments ?? []), stderr: .inherit)
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        func status() async throws -> AgentStatus? { try await Bench.agentStatus(socket: socket) }
        func until(_ what: String, timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws
        {
            try await Bench.until(what, timeout: timeout, every: .milliseconds(2), condition)
        }
        func admin(_ handler: String, _ state: String) async throws {
            let client = try AgentClient(socketPath: socket)
            defer { client.close() }
            try client.send(.userControl(.init(handler: handler, state: state)))
            for await _ in client.messages { break }
        }
        try await until("agent channel open") { try await status()?.channel == "open" }
        func tokens() async throws -> [String: String] { try await status()?.tokens ?? [:] }
        try await until("tokens") { (try? await tokens().count) == 10 }
        let tokenTable = try await tokens()
        for n in 0..<10 { try await admin("h\(n)", "started") }
        try await until("10 handlers registered") {
            try await status()?.handlers.filter { $0.connected }.count == 10
        }

        let loop = try EventLoop(name: "agent-bench")
        loop.start()
        let provider = try await GatewayBench.connect(port: gateway.providerPort, loop: loop)
        defer { provider.close() }
        let jwt = try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: now / 1000)
            .signed(
                with: ProviderToken.privateKey(pem: String(contentsOfFile: certs + "/apns-key.p8", encoding: .utf8)))
        func push(_ n: Int) async throws {
            let topic = "com.example.h\(n).voip"
            let sentAt = Date().timeIntervalSince1970 * 1000
            let request = HTTP2ClientRequest(
                path: "/3/device/\(tokenTable[topic] ?? "")", authority: "localhost",
                headers: [
                    HTTP2Header("authorization", "bearer \(jwt)", neverIndex: true), HTTP2Header("apns-topic", topic),
                    HTTP2Header("apns-push-type", "voip"),
                ], body: Array(String(format: #"{"sentAt":%.3f}"#, sentAt).utf8))
            let answer = await provider.send(request)
            guard case .response(200, _, _) = answer else {
                throw GatewayBench.BenchError(description: "push refused: \(answer)")
            }
        }
        func latencies(_ n: Int) -> [Double] {
            ((try? String(contentsOfFile: "\(directory)/h\(n).log", encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { line in
                    line.split(separator: " ").first { $0.hasPrefix("latencyMs=") }.flatMap { Double($0.dropFirst(10)) }
                }
        }
        for sample in 1...options.samples {
            try await push(0)
            try await until("running sample \(sample)") { latencies(0).count >= sample }
        }
        let running = latencies(0)
        report(
            "push → running handler (ms)",
            String(
                format: "p50 %.2f, p99 %.2f (n=%d)", GatewayBench.percentile(running, 0.5),
                GatewayBench.percentile(running, 0.99), running.count))
        for sample in 1...options.launchSamples {
            try await admin("h1", "stopped")
            try await until("h1 stopped") {
                try await status()?.handlers.first { $0.name == "h1" }?.state == "notRunning"
            }
            try await push(1)
            try await until("launch sample \(sample)") { latencies(1).count >= sample }
        }
        let launched = latencies(1)
        report(
            "push → launched handler (ms)",
            String(
                format: "p50 %.2f, p99 %.2f (n=%d)", GatewayBench.percentile(launched, 0.5),
                GatewayBench.percentile(launched, 0.99), launched.count))

        // Idle: the channel open with its keepalive (the gateway's heartbeat, 240 s), 10 handlers
        // configured and none running, no traffic; counted once what the benchmark caused has settled.
        try await admin("h0", "stopped")
        try await until("no handler running") {
            try await status()?.handlers.allSatisfy { $0.state == "notRunning" || $0.state == "suspended" } == true
        }
        for n in 0..<10 { try await admin("h\(n)", "stopped") }
        let pid = agent.processIdentifier
        try await settle(pid: pid)
        let idle = try await measureIdle(pids: [pid, gateway.process.processIdentifier], seconds: options.idleSeconds)
        report("agent idle (channel open, 10 handlers, none running, \(options.idleSeconds) s)", idle[0].summary)
        if sessionBus != nil {
            // Proof the bus was connected during the window: the session as the agent followed it.
            let session = try await status()?.session
            report(
                "agent session (D-Bus, logind stand-in)",
                "lock=\(session?.lock ?? "none") onBattery=\(session?.onBattery.map(String.init) ?? "no UPower")")
        }
        report(
            "agent idle wake-ups by thread",
            idle[0].byThread.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        report("gateway idle (that channel, heartbeat 240 s, sweep 30 s, \(options.idleSeconds) s)", idle[1].summary)
        report(
            "gateway idle wake-ups by thread",
            idle[1].byThread.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        // The same agent (state, handlers) with the network down: stopped here, started again without a route.
        agent.terminate()
        agent.waitUntilExit()
        switch try await networkDownIdle(
            arguments: [
                "--gateway", "https://10.213.0.1:\(gateway.devicePort)", "--ca", certs + "/ca.pem", "--handlers",
                directory + "/handlers", "--state-dir", directory + "/state", "--socket", socket, "--log-level",
                "error",
            ], gateway: gateway.process.processIdentifier, seconds: options.idleSeconds)
        {
        case .success(let down):
            report("agent idle, network down (\(options.idleSeconds) s)", down.agent.summary)
            report(
                "agent idle, network down, wake-ups by thread",
                down.agent.byThread.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(
                    separator: ", "))
            report("gateway idle, that device offline (no channel, \(options.idleSeconds) s)", down.gateway.summary)
            report(
                "gateway idle, device offline, wake-ups by thread",
                down.gateway.byThread.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(
                    separator: ", "))
        case .failure(let error): report("agent idle, network down", "not measured: \(error.description)")
        }

        // Network back → channel open, in process (the agent's reaction: close, reconnect, TLS, hello).
        var logger = Logger(label: "rouse.agent.bench")
        logger.logLevel = .critical
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:\(gateway.devicePort)", caFile: certs + "/ca.pem"),
            enrollmentSecret: secrets[1], socketPath: directory + "/inprocess.sock", handlers: [])
        configuration.assumeReachable = true
        let inProcess = try Agent(
            configuration: configuration, store: JSONFileAgentStateStore(path: directory + "/inprocess.json"),
            logger: logger)
        try await inProcess.start()
        try await until("in-process channel open") { await inProcess.status().channel == "open" }
        var reconnects: [Double] = []
        for _ in 0..<options.reconnects {
            await inProcess.reachabilityChanged(false)
            await inProcess.reachabilityChanged(true)
            try await until("reopened") { await inProcess.status().channel == "open" }
            if let duration = await inProcess.lastReconnectDuration() {
                reconnects.append(duration.inMilliseconds)
            }
        }
        await inProcess.shutdown()
        report(
            "network back → channel open (ms)",
            String(
                format: "p50 %.2f, p99 %.2f (n=%d; the agent's reaction, netlink detection not included)",
                GatewayBench.percentile(reconnects, 0.5), GatewayBench.percentile(reconnects, 0.99), reconnects.count))
        do {
            let linkUp = try await AgentNetworkBench.linkUpToOpen(
                iterations: options.reconnects, directory: directory, certs: certs,
                database: directory + "/netns.sqlite")
            report(
                "link up → channel open, agent in a network namespace (ms)",
                String(
                    format: "p50 %.1f, p99 %.1f (n=%d; netlink event, reachability, TLS, hello; polled every 1 ms)",
                    GatewayBench.percentile(linkUp, 0.5), GatewayBench.percentile(linkUp, 0.99), linkUp.count))
        } catch {
            report("link up → channel open, agent in a network namespace", "not measured: \(error)")
        }
        if options.json {
            for (name, value) in results {
                print("{\"name\":\"\(name)\",\"value\":\"\(value.replacingOccurrences(of: "\"", with: "'"))\"}")
            }
        }
    }

    /// Voluntary context switches of each thread of `pid`, by thread id.
    static func contextSwitches(pid: Int32) -> [String: Int] { ProcessProbe.switches(pid, voluntaryOnly: true) }
}
