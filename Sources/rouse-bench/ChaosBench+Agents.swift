import Foundation
import RouseAgent
import RouseAgentClient
import RouseChildProcess

/// Real `rouse-agent` processes in the soak, each with one handler (the example handler, kept running, reporting a
/// call for every VoIP push and writing it to its log), each given every node (`--gateway A,B,C`): the end-to-end
/// half of the count. A push counts as arrived when its handler logged it; one logged twice was handed twice
/// (the agent's persisted de-duplication window should make that impossible, across its own SIGKILLs too).
actor ChaosAgents {
    struct Member {
        let arguments: [String]
        let socket: String
        let log: String
        let stderr: String
        var process: RunningChild?
        var token: String?
        var starts = 0
    }

    private var members: [Member]
    private let executable: String
    private let processes: ProcessTable

    private init(members: [Member], executable: String) {
        self.members = members
        self.executable = executable
        self.processes = ProcessTable(count: members.count)
    }

    static func topic(_ index: Int) -> String { "com.example.chaos\(index)" }

    /// Writes each agent's handler file, starts the agents (each enrolls with its secret) and waits for each
    /// handler's token.
    static func start(
        secrets: [String], gateways: [String], directory: String, certs: String, executable: String, handler: String
    ) async throws -> ChaosAgents {
        var members: [Member] = []
        for (index, secret) in secrets.enumerated() {
            let home = directory + "/agent\(index)"
            try FileManager.default.createDirectory(atPath: home + "/handlers", withIntermediateDirectories: true)
            let log = home + "/handler.log"
            let file = """
                topic = "\(topic(index))"
                command = ["\(handler)", "--mode", "report", "--log", "\(log)", "--quiet"]
                push-types = ["voip"]
                allow-root = true
                [limits]
                suspend-after-seconds = 86400
                """
            try Data(file.utf8).write(to: URL(fileURLWithPath: home + "/handlers/chaos.toml"))
            let socket = home + "/agent.sock"
            members.append(
                Member(
                    arguments: [
                        "--gateway", gateways.joined(separator: ","), "--ca", certs + "/ca.pem", "--enroll-secret",
                        secret, "--handlers", home + "/handlers", "--state-dir", home + "/state", "--socket", socket,
                        "--assume-reachable", "--log-level", "warning",
                    ], socket: socket, log: log, stderr: home + "/agent"))
        }
        let agents = ChaosAgents(members: members, executable: executable)
        for index in members.indices { try await agents.startAgent(index) }
        return agents
    }

    var count: Int { members.count }

    func isRunning(_ index: Int) -> Bool { members[index].process?.isRunning ?? false }

    /// The handler's token of agent `index` (known once its first start finished; kept across its restarts).
    func token(_ index: Int) -> String? { members[index].token }

    /// Starts agent `index` and waits (30 s at most) until it answers on its socket with its handler's token.
    func startAgent(_ index: Int) async throws {
        members[index].starts += 1
        let process = try ChildProcess.start(
            executable, members[index].arguments,
            stderr: .file(members[index].stderr + "-\(members[index].starts).log"))
        members[index].process = process
        processes.set(index, process)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let token = await Self.token(socket: members[index].socket, topic: Self.topic(index) + ".voip") {
                members[index].token = token
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Bench.Failure(
            description: "chaos: agent \(index) had no token within 30 s (\(members[index].stderr)-*.log)")
    }

    /// SIGKILL of agent `index` (its handler stays, and is re-attached by the next start).
    func killAgent(_ index: Int) {
        members[index].process?.kill()
        members[index].process = nil
        processes.set(index, nil)
    }

    func healAll() async {
        for index in members.indices where !isRunning(index) { try? await startAgent(index) }
    }

    /// Push number → how many times a handler logged it, over every agent.
    func handed() -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for member in members {
            let text = (try? String(contentsOfFile: member.log, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.hasPrefix("push ") {
                guard let range = line.range(of: #"payload={"n":"#) else { continue }
                if let n = Int(line[range.upperBound...].prefix { $0.isNumber }) { counts[n, default: 0] += 1 }
            }
        }
        return counts
    }

    /// Stops every agent as a service manager does (SIGTERM: the agent stops its handlers itself and removes its
    /// cgroups), SIGKILL after 10 s (synchronously: called from a `defer` or a signal).
    nonisolated func stopAll() {
        let running = processes.all()
        for process in running { process.terminate() }
        for process in running {
            for _ in 0..<100 where process.isRunning { usleep(100_000) }
            process.kill()
        }
    }

    /// The token of `topic` from the agent's status, if it answers within 2 s.
    private static func token(socket: String, topic: String) async -> String? {
        guard let client = try? AgentClient(socketPath: socket) else { return nil }
        defer { client.close() }
        guard (try? client.send(.status)) != nil else { return nil }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(2))
            client.close()
        }
        defer { watchdog.cancel() }
        for await reply in client.messages {
            guard case .statusReply(let answer) = reply,
                let status = try? JSONDecoder().decode(AgentStatus.self, from: Data(answer.detail.utf8))
            else { return nil }
            return status.tokens?[topic]
        }
        return nil
    }
}
