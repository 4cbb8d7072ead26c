import Foundation
import Glibc
import Logging
import RouseActivation
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseClock

/// The IPC half of `rouse-bench activation`: an in-process `Agent` (no gateway: activations do not need one),
/// this process registered as handler `bench` over the agent's Unix socket, and the example handler launched
/// by the agent as handler `phone`.
/// - round trip: `activate` sent → `granted` received (then an untimed `deactivate`), p50/p99;
/// - death → notification: `phone` holds a call that interrupts `bench`'s music; SIGKILL to `phone` → `bench`
///   receives `interruptionEnded` (the agent sees the death through the pidfd or the socket HUP).
extension ActivationBench {
    struct IPCFigures: Codable {
        var roundTrips: Int
        var roundTripP50Microseconds: Double
        var roundTripP99Microseconds: Double
        var deaths: Int
        var deathToNotificationP50Milliseconds: Double
        var deathToNotificationP99Milliseconds: Double
    }

    static func measureIPC(roundTrips: Int, deaths: Int) async throws -> IPCFigures {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-activation-bench-\(UUID())"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/phone.fifo"
        guard mkfifo(fifo, 0o600) == 0 else { throw BenchError(description: "mkfifo \(fifo): errno \(errno)") }
        guard let me = AgentSyscallsPath.executable() else {
            throw BenchError(description: "cannot read /proc/self/exe")
        }
        var rules = HandlerRules()
        rules.suspendAfter = .seconds(3600)
        let handlers = [
            HandlerConfiguration(
                name: "bench", topic: "com.example.bench", command: [me], allowRoot: true, rules: rules),
            HandlerConfiguration(
                name: "phone", topic: "com.example.phone",
                command: [
                    try GatewayBench.sibling("rouse-example-handler"), "--mode", "report", "--commands", fifo,
                    "--quiet",
                ], allowRoot: true, rules: rules),
        ]
        let socket = directory + "/agent.sock"
        var logger = Logger(label: "rouse.activation.bench")
        logger.logLevel = .critical
        let agent = try Agent(
            configuration: AgentConfiguration(
                endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:9"), socketPath: socket, handlers: handlers),
            store: JSONFileAgentStateStore(path: directory + "/state.json"), logger: logger)
        try await agent.start()
        let client = try AgentClient(socketPath: socket)
        defer { client.close() }
        var messages = client.messages.makeAsyncIterator()
        func next(_ what: String, _ matches: (AgentEvent) -> Bool) async throws {
            while let message = await messages.next() {
                if matches(message) { return }
            }
            throw BenchError(description: "the agent closed the connection while waiting for \(what)")
        }
        try client.register(handler: "bench")
        try await next("registered") { if case .registered = $0 { true } else { false } }
        try client.setState("active")
        let music = try SessionConfiguration(category: .playback)

        var trips: [Double] = []
        trips.reserveCapacity(roundTrips)
        for _ in 0..<roundTrips {
            let start = ContinuousClock.now
            let answer = try await client.activate(session: "music", configuration: music)
            trips.append(microseconds(ContinuousClock.now - start))
            guard answer == .granted else { throw BenchError(description: "activate answered \(answer)") }
            try await client.deactivate(session: "music")
        }

        guard try await client.activate(session: "music", configuration: music) == .granted else {
            throw BenchError(description: "music not granted")
        }
        var deathTimes: [Double] = []
        for round in 0..<deaths {
            let admin = try AgentClient(socketPath: socket)
            _ = try await admin.request(.userControl(.init(handler: "phone", state: "started")))
            admin.close()
            var pid: Int32?
            let deadline = ContinuousClock.now + .seconds(10)
            while pid == nil, ContinuousClock.now < deadline {
                let phone = await agent.status().handlers.first { $0.name == "phone" }
                if phone?.connected == true { pid = phone?.pid } else { try await Task.sleep(for: .milliseconds(1)) }
            }
            guard let pid else { throw BenchError(description: "phone did not register") }
            let pipe = try FileHandle(forWritingTo: URL(fileURLWithPath: fifo))
            try pipe.write(contentsOf: Data("call c\(round)\n".utf8))
            try pipe.close()
            try await next("interruptionBegan") { Self.isMusic($0, "interruptionBegan") }
            let killed = ContinuousClock.now
            kill(pid, SIGKILL)
            try await next("interruptionEnded") { Self.isMusic($0, "interruptionEnded") }
            deathTimes.append(microseconds(ContinuousClock.now - killed) / 1000)
            while await agent.status().handlers.first(where: { $0.name == "phone" })?.state != "notRunning" {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        await agent.shutdown()
        return IPCFigures(
            roundTrips: trips.count, roundTripP50Microseconds: GatewayBench.percentile(trips, 0.5),
            roundTripP99Microseconds: GatewayBench.percentile(trips, 0.99), deaths: deathTimes.count,
            deathToNotificationP50Milliseconds: GatewayBench.percentile(deathTimes, 0.5),
            deathToNotificationP99Milliseconds: GatewayBench.percentile(deathTimes, 0.99))
    }

    private static func microseconds(_ duration: Duration) -> Double {
        duration.inMicroseconds
    }

    /// Whether `message` is activation event `event` for the session `music`.
    static func isMusic(_ message: AgentEvent, _ event: String) -> Bool {
        guard case .activation(let activation) = message else { return false }
        return activation.session == "music" && activation.event == event
    }
}

/// `/proc/self/exe`: the handler identity the agent checks for a connecting `bench` handler.
enum AgentSyscallsPath {
    static func executable() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
