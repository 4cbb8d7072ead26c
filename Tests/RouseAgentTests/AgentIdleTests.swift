import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseGateway
import RouseTestSupport
import Testing

/// An idle agent sleeps. Its wake-ups are the voluntary context switches of all its threads
/// (`voluntary_ctxt_switches` in `/proc/PID/task/*/status`: each is a sleep that ended), counted over a window in
/// which nothing happens: channel open (no heartbeat), a handler registered and suspended, no traffic.
@Suite("An idle rouse-agent sleeps", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(2)))
struct AgentIdleTests {
    /// Voluntary context switches by thread (name and tid) of `pid`.
    static func switches(pid: Int32) -> [String: Int] {
        Dictionary(
            uniqueKeysWithValues: ProcessProbe.threads(pid).map { ("\($0.value.name)/\($0.key)", $0.value.voluntary) })
    }

    @Test func anIdleAgentWakesAtMostOnceInTenSeconds() async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let file = """
            topic = "com.example.idle"
            command = ["\(try Products.path("rouse-example-handler"))", "--mode", "report", "--quiet"]
            push-types = ["voip"]
            allow-root = true
            """
        try Data(file.utf8).write(to: URL(fileURLWithPath: "\(directory)/handlers/idle.toml"))
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
                "--restoration-grace-seconds", "0.2",
            ], stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        try await eventually("channel open", timeout: .seconds(30)) {
            (try? await AgentNetworkTests.status(socket: socket))?.channel == "open"
        }
        let client = try AgentClient(socketPath: socket)
        try client.send(.userControl(.init(handler: "idle", state: "started")))
        for await _ in client.messages { break }
        client.close()
        try await eventually("handler registered and suspended") {
            let handler = (try? await AgentNetworkTests.status(socket: socket))?.handlers.first
            return handler?.connected == true && handler?.state == "suspended"
        }
        // What the set-up caused settles first: our status requests (the registration sweep they armed, 5 s later),
        // a libcurl timer after the enrollment and token requests (about 10 s). Quiet means 6 s without a single
        // wake-up; an agent that wakes every few seconds never gets there (the wait times out: the test fails).
        let pid = agent.process.processIdentifier
        guard try await ProcessProbe.settle(pid, quiet: .seconds(6), limit: .seconds(45)) else {
            throw FixtureError("the agent never went quiet")
        }
        let before = Self.switches(pid: pid)
        try await Task.sleep(for: .seconds(10))
        let after = Self.switches(pid: pid)
        let woke = after.map { ($0.key, $0.value - (before[$0.key] ?? 0)) }.filter { $0.1 > 0 }.sorted { $0.1 > $1.1 }
        let total = woke.reduce(0) { $0 + $1.1 }
        #expect(total <= 1, "wake-ups in 10 s by thread: \(woke)")
    }
}
