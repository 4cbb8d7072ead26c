import Foundation
import Logging
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseState

/// `rouse-bench state --agent`: preserve and restore through the agent's IPC, with real handler processes
/// (`rouse-example-handler --preserve --bench-pieces N --piece-bytes B`, next to `rouse-bench`) and an
/// in-process `Agent` over sealed stores (key file). Preserve = `preserveRequest` to every handler, each
/// answers with its pieces (base64 over the socket), the agent checks and seals them (atomic, durable) —
/// until every answer is stored, plus the agent's own archive. Restore = from `rouse agent start` of every
/// handler to every `restoreReply` recorded: spawn, register, launch record, archive opened and offered over
/// IPC, pieces decoded and handed back by the client library, reply run through the rules; the same launch
/// without an archive is measured too, so the difference is the restoration's own cost.
enum AgentStateBench {
    static func run(_ options: StateBench.Options) async throws {
        let base = options.directory ?? FileManager.default.temporaryDirectory.path
        let root = "\(base)/rouse-bench-agent-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let logger = Logger(label: "rouse-bench.agent-state") { _ in SwiftLogNoOpLogHandler() }
        let executable = try Bench.product("rouse-example-handler")
        let share = options.pieces / options.handlers
        let handlers = (0..<options.handlers).map { n in
            HandlerConfiguration(
                name: "h\(n)", topic: "com.example.h\(n)",
                command: [
                    executable, "--mode", "report", "--quiet", "--preserve", "--bench-pieces", "\(share)",
                    "--piece-bytes",
                    "\(options.pieceBytes)",
                ],
                pushTypes: ["voip"], allowRoot: true, rules: HandlerRules())
        }
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:9", caFile: nil), socketPath: root + "/agent.sock",
            handlers: handlers)
        configuration.assumeReachable = true
        configuration.restorationGrace = .milliseconds(100)
        configuration.preserveTimeout = .seconds(10)
        let persistence = try AgentPersistence(
            stateDirectory: root + "/state-dir", keyDirectory: root + "/keys", preference: .keyFile, logger: logger)
        let agent = try Agent(
            configuration: configuration,
            store: SealedAgentStateStore(
                store: persistence.secrets, legacyPath: nil, logger: logger),
            persistence: persistence, logger: logger)
        try await agent.start()
        defer { Task { await agent.shutdown() } }

        let clock = ContinuousClock()
        func admin(_ state: String) async throws {
            for handler in handlers {
                let client = try AgentClient(socketPath: configuration.socketPath)
                try client.send(.userControl(.init(handler: handler.name, state: state)))
                for await _ in client.messages { break }
                client.close()
            }
        }
        func until(_ what: String, _ condition: () async -> Bool) async throws {
            let deadline = clock.now + .seconds(30)
            while clock.now < deadline {
                if await condition() { return }
                try await Task.sleep(for: .milliseconds(1))
            }
            throw StateBench.BenchError(description: "timed out: \(what)")
        }
        func connected() async -> Int { await agent.status().handlers.filter(\.connected).count }
        func killAll() async throws {
            for handler in await agent.status().handlers { if let pid = handler.pid { kill(pid, SIGKILL) } }
            try await until("handlers exited") { await agent.status().handlers.allSatisfy { $0.pid == nil } }
        }

        // A first launch: nothing to restore (the launch baseline).
        let launch = try await clock.measure {
            try await admin("started")
            try await until("registered") { await connected() == handlers.count }
        }
        var preserveTimes: [Double] = []
        var restoreTimes: [Double] = []
        var archiveBytes = 0
        for iteration in 0..<options.iterations {
            let stored = await agent.preservesStored
            preserveTimes.append(
                try await clock.measure {
                    await agent.preserveHandlers()
                    try await until("preserved") { await agent.preservesStored >= stored + handlers.count }
                }.seconds)
            if iteration == 0 {
                for handler in handlers {
                    let path = root + "/state-dir/state/\(handler.name).state"
                    archiveBytes += (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                }
            }
            // Past the grace period, so that killing them is not a crashed launch.
            try await Task.sleep(for: .milliseconds(200))
            try await killAll()
            let answered = await agent.restorationsAnswered
            restoreTimes.append(
                try await clock.measure {
                    try await admin("started")
                    try await until("restored") { await agent.restorationsAnswered >= answered + handlers.count }
                }.seconds)
        }
        try await killAll()
        let preserve = StateBench.Summary(preserveTimes)
        let restore = StateBench.Summary(restoreTimes)
        func ms(_ seconds: Double) -> String { String(format: "%.2f", seconds * 1000) }
        let pieces = share * options.handlers
        if options.json {
            print(
                """
                {"bench":"state-agent","handlers":\(options.handlers),"pieces":\(pieces),\
                "piece_bytes":\(options.pieceBytes),"iterations":\(options.iterations),\
                "preserve_ms_median":\(ms(preserve.median)),"preserve_ms_min":\(ms(preserve.min)),\
                "restore_ms_median":\(ms(restore.median)),"restore_ms_min":\(ms(restore.min)),\
                "launch_ms":\(ms(launch.seconds)),"archive_bytes":\(archiveBytes)}
                """)
        } else {
            print(
                """
                state through the agent: \(pieces) pieces of \(options.pieceBytes) B (+ an empty parent each) across \
                \(options.handlers) handler processes, \(options.iterations) iterations, in \(base)
                  preserve (preserveRequest → pieces over IPC → checked, sealed, written; + the agent's own): \
                median \(ms(preserve.median)) ms, min \(ms(preserve.min)) ms, max \(ms(preserve.max)) ms
                  relaunch + restore (spawn, register, offer over IPC, hand back, reply): \
                median \(ms(restore.median)) ms, min \(ms(restore.min)) ms, max \(ms(restore.max)) ms
                  first launch, nothing to restore (baseline): \(ms(launch.seconds)) ms
                  archive size: \(archiveBytes) B on disk for \(pieces * options.pieceBytes) B of state
                """)
        }
    }
}
