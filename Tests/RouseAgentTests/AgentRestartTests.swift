import Foundation
import Glibc
import Logging
import RouseAgent
import RouseAgentClient
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Testing

/// The built `rouse-agent` as a child process (killed with SIGKILL by the tests, and when the fixture goes away).
final class AgentProcess: Sendable {
    let process: RunningChild

    init(
        executable: String? = nil, arguments: [String], environment: [String: String] = [:], stderrPath: String
    ) async throws {
        process = try ChildProcess.start(
            try executable ?? Products.path("rouse-agent"), arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 }, stdout: .lines,
            stderr: .file(stderrPath))
        guard await process.lines.first(timeout: .seconds(20), where: { $0.hasPrefix("rouse-agent ready") }) != nil
        else {
            process.kill()
            throw FixtureError(
                "rouse-agent not ready: \((try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "")")
        }
    }

    /// SIGKILL (to its process group: the handlers it launched have groups of their own and live on), then waits
    /// until it is gone.
    func kill() { process.kill() }
}

@Suite("rouse-agent killed and restarted", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(2)))
struct AgentRestartTests {
    @Test func sigkilledAgentLosesNoPushAndHandsNoneTwice() async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = try await Provider.connect(port: gateway.providerPort)
        defer {
            provider.client.close()
            Task { await gateway.shutdown(gracePeriod: .seconds(1)) }
        }
        let log = directory + "/voip.log"
        // The handler never reports and the deadline is long: pushes stay handed but unacknowledged.
        let handler = """
            topic = "com.example.rouse"
            command = ["\(try Products.path("rouse-example-handler"))", "--mode", "ignore", "--log", "\(log)"]
            push-types = ["voip"]
            allow-root = true
            [limits]
            voip-deadline-seconds = 60
            """
        try Data(handler.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/voip.toml"))
        let arguments = [
            "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
            "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
            "--state-dir", directory + "/state", "--socket", directory + "/agent.sock", "--assume-reachable",
            "--log-level", "debug",
        ]
        @Sendable func handed() -> [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
                .filter { $0.hasPrefix("push id=") }
        }
        @Sendable func token() async throws -> String? {
            try await AgentNetworkTests.status(socket: directory + "/agent.sock").tokens?["com.example.rouse.voip"]
        }
        var agent = try await AgentProcess(arguments: arguments, stderrPath: directory + "/agent1.stderr")
        try await eventually("token in the agent's state") { try await token() != nil }
        let voipToken = try #require(try await token())
        #expect(
            await provider.push(token: voipToken, topic: "com.example.rouse.voip", type: "voip", payload: #"{"n":1}"#)
                == 200)
        try await eventually("push 1 handed") { handed().count == 1 }
        agent.kill()
        // While the agent is down: stored by the gateway.
        #expect(
            await provider.push(token: voipToken, topic: "com.example.rouse.voip", type: "voip", payload: #"{"n":2}"#)
                == 200)
        agent = try await AgentProcess(arguments: arguments, stderrPath: directory + "/agent2.stderr")
        defer { agent.kill() }
        try await eventually("push 2 handed after the restart") { handed().count >= 2 }
        // Push 1 is re-sent by the gateway (never acked) and recognised: acknowledged, not handed again.
        try await eventually("push 1 acknowledged as a duplicate") {
            try AgentHarness.pending(gateway) == 1
        }
        let lines = handed()
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.filter { $0.contains(#"{"n":1}"#) }.count == 1)
        #expect(lines.filter { $0.contains(#"{"n":2}"#) }.count == 1)
    }

    /// Alive: exists and is not a zombie (nobody may reap orphans in a container).
    static func alive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].drop { $0 == " " }.first != "Z"
    }

    @Test func frozenHandlersOfAKilledAgentAreKilledByTheNextAgent() async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let handler = """
            topic = "com.example.rouse"
            command = ["\(try Products.path("rouse-example-handler"))", "--mode", "report"]
            push-types = ["voip"]
            allow-root = true
            [limits]
            suspend-after-seconds = 0.2
            """
        try Data(handler.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/voip.toml"))
        let socket = directory + "/agent.sock"
        let arguments = [
            "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
            "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
            "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
        ]
        let first = try await AgentProcess(arguments: arguments, stderrPath: directory + "/agent1.stderr")
        let client = try AgentClient(socketPath: socket)
        try client.send(.userControl(.init(handler: "voip", state: "started")))
        for await _ in client.messages { break }
        client.close()
        @Sendable func status() async throws -> AgentStatus? { try await AgentNetworkTests.status(socket: socket) }
        try await eventually("handler suspended") { try await status()?.handlers.first?.state == "suspended" }
        let pid = try #require(try await status()?.handlers.first?.pid)
        let mechanism = try await status()?.suspendMechanism
        // The wait is for the agent only: not for the stdout pipe, which the frozen orphan keeps open.
        first.kill()
        // Orphaned and frozen: it cannot notice that its agent is gone. Every agent that starts cleans up the cgroups
        // of dead agents beside its own, and the other suites start agents in this same cgroup meanwhile: one of
        // them may have killed it already, which is the behaviour under test, done by another agent.
        guard Self.alive(pid) else { return }
        // Another state directory: the next agent has no stored identity for it, so it cannot re-attach (see
        // AgentPreservationTests for the re-attach) and treats it as stale.
        let fresh = arguments.map { $0 == directory + "/state" ? directory + "/state2" : $0 }
        let second = try await AgentProcess(arguments: fresh, stderrPath: directory + "/agent2.stderr")
        defer { second.kill() }
        if mechanism == "cgroup-v2" {
            try await eventually("the orphaned handler was killed") { !Self.alive(pid) }
        } else {
            Glibc.kill(pid, SIGKILL)
        }
    }
}
