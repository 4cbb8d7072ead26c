import Foundation
import Glibc
import RouseAPNs
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseEventLoop
import RouseGateway
import RouseHTTP2

/// `rouse-bench agent --memory-pressure`: the agent (a child `rouse-agent`, release build) with three handlers: `big`
/// allocates 200 MiB and is frozen, `call` holds a call, `hog` runs in the background and reads a 128 MiB file over
/// and over in its 48 MiB `memory-max-mib` group (real reclaim stalls: memory pressure the kernel counts). The PSI
/// trigger fires; the benchmark reports the order the agent terminated handlers in, each one's time from the
/// episode's first trigger, the time to relief (the check that found the stall below the trigger's rate), and that
/// the call's handler and the agent are alive. The reference is the kernel's own OOM order on the same processes
/// (`/proc/PID/oom_score`: who it would kill first).
extension AgentBench {
    static func runMemoryPressure(arguments: [String]) async throws {
        let json = arguments.contains("--json")
        let trigger = Bench.option(arguments, "--trigger") ?? "some 40000 2000000"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-memory-bench-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory + "/handlers", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certs = try GatewayBench.certsDirectory()
        let database = directory + "/bench.sqlite"
        let store = try SQLiteGatewayStore(path: database)
        let now = Gateway.systemMilliseconds()
        let secret = try Gateway.makeEnrollmentSecret(store: store, now: now, validity: .seconds(3600))
        let gateway = try await ChildGateway.start(
            executable: try GatewayBench.sibling("rouse-gateway"), directory: directory, database: database,
            certs: certs, limits: ChildGateway.benchLimits, keyTopics: #"["*"]"#)
        defer { gateway.stop() }
        var results: [(String, String)] = []
        func report(_ name: String, _ value: String) {
            results.append((name, value))
            if !json { print("\(name): \(value)") }
        }
        report("machine", GatewayBench.machine())

        let example = try GatewayBench.sibling("rouse-example-handler")
        let handlers: [(String, [String], String)] = [
            ("big", ["--mode", "report", "--allocate-mib", "200"], "suspend-after-seconds = 0.3\n"),
            ("call", ["--mode", "keepcall"], ""),
            (
                "hog", ["--mode", "report", "--thrash", directory + "/hog.bin:128"],
                "suspend-after-seconds = 3600\nmemory-max-mib = 48\n"
            ),
        ]
        for (name, arguments, limits) in handlers {
            let command = ([example] + arguments + ["--log", "\(directory)/\(name).log"]).map { "\"\($0)\"" }
            let file = """
                topic = "com.example.\(name)"
                command = [\(command.joined(separator: ", "))]
                push-types = ["voip"]
                allow-root = true
                [limits]
                \(limits)
                """
            try Data(file.utf8).write(to: URL(fileURLWithPath: "\(directory)/handlers/\(name).toml"))
        }
        let socket = directory + "/agent.sock"
        let agent = try ChildProcess.start(
            try GatewayBench.sibling("rouse-agent"),
            [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", certs + "/ca.pem", "--enroll-secret",
                secret, "--handlers", directory + "/handlers", "--state-dir", directory + "/state", "--socket", socket,
                "--assume-reachable", "--log-level", "error", "--memory-pressure", trigger,
                "--memory-pressure-persist-seconds", "1",
            ], stderr: .inherit)
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        func status() async throws -> AgentStatus? { try await Bench.agentStatus(socket: socket) }
        func handler(_ name: String) async throws -> AgentStatus.Handler? {
            try await status()?.handlers.first { $0.name == name }
        }
        func until(_ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool) async throws
        {
            try await Bench.until(what, timeout: timeout, every: .milliseconds(5), condition)
        }
        try await until("agent channel open and 3 tokens") {
            let status = try await status()
            return status?.channel == "open" && (status?.tokens?.count ?? 0) == 3
        }
        guard let memory = try await status()?.memory, let source = memory.source else {
            throw GatewayBench.BenchError(
                description: "memory pressure not watched: \(try await status()?.memory?.note ?? "-")")
        }
        report("trigger", "\(trigger) on \(source)")
        let tokens = try await status()?.tokens ?? [:]
        let loop = try EventLoop(name: "memory-bench")
        loop.start()
        let provider = try await GatewayBench.connect(port: gateway.providerPort, loop: loop)
        defer { provider.close() }
        let jwt = try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: now / 1000)
            .signed(
                with: ProviderToken.privateKey(pem: String(contentsOfFile: certs + "/apns-key.p8", encoding: .utf8)))
        func push(_ name: String) async throws {
            let topic = "com.example.\(name).voip"
            let request = HTTP2ClientRequest(
                path: "/3/device/\(tokens[topic] ?? "")", authority: "localhost",
                headers: [
                    HTTP2Header("authorization", "bearer \(jwt)", neverIndex: true), HTTP2Header("apns-topic", topic),
                    HTTP2Header("apns-push-type", "voip"),
                ], body: Array(#"{"n":1}"#.utf8))
            guard case .response(200, _, _) = await provider.send(request) else {
                throw GatewayBench.BenchError(description: "push to \(name) refused")
            }
        }
        try await push("big")
        try await push("call")
        try await until("big frozen with its 200 MiB, call in its call") {
            let big = try await handler("big")
            let call = try await handler("call")
            return big?.state == "suspended" && (big?.memoryBytes ?? 0) > 200 << 20 && call?.holdsAudio == true
        }
        let big = try await handler("big")
        let callPID = try await handler("call")?.pid ?? 0
        let bigPID = big?.pid ?? 0
        report("big, frozen", String(format: "%.1f MiB (pid %d)", Double(big?.memoryBytes ?? 0) / 1_048_576, bigPID))
        func oomScore(_ pid: Int32) -> String {
            (try? String(contentsOfFile: "/proc/\(pid)/oom_score", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "-"
        }
        report(
            "kernel OOM scores (reference: its own order)",
            "big \(oomScore(bigPID)), call \(oomScore(callPID)), agent \(oomScore(agent.processIdentifier))")

        let start = ContinuousClock.now
        try await push("hog")
        try await until("the episode ended (relief)", timeout: .seconds(180)) {
            guard let memory = try await status()?.memory else { return false }
            return memory.episodes >= 1 && !memory.underPressure && memory.lastReliefMilliseconds != nil
        }
        let elapsed = ContinuousClock.now - start
        let after = try await status()?.memory
        let order = (after?.recent ?? []).map {
            "\($0.handler) (\($0.state), \(String(format: "%.1f", Double($0.memoryBytes ?? 0) / 1_048_576)) MiB, +\($0.afterMilliseconds) ms)"
        }
        report("terminated, in order (+ms from the first trigger)", order.joined(separator: ", "))
        report("first trigger → relief", "\(after?.lastReliefMilliseconds ?? -1) ms")
        report(
            "hog launched → relief (wall)",
            "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000) ms")
        report("memoryWarning sent", "\(after?.warningsSent ?? 0)")
        report("call's handler", kill(callPID, 0) == 0 ? "alive, untouched" : "DEAD")
        report("agent", kill(agent.processIdentifier, 0) == 0 ? "alive" : "DEAD")
        if json {
            let object = Dictionary(results.map { ($0.0, $0.1) }, uniquingKeysWith: { $1 })
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
            print(String(decoding: data, as: UTF8.self))
        }
    }
}
