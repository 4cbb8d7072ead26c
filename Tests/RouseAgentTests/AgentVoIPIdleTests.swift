import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseGateway
import RouseTestSupport
import Testing

/// Watched sockets and keep-alives cost no wake-up while nothing arrives: the sockets sit in an epoll set whose
/// thread sleeps, and the keep-alive is one timer at its interval (600 s, far beyond the window counted).
@Suite("An idle rouse-agent watching a VoIP socket sleeps", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(2)))
struct AgentVoIPIdleTests {
    @Test func aWatchedSocketAndAKeepAliveAddNoWakeUp() async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let peer = try VoIPPeer()
        let file = """
            topic = "com.example.idle"
            command = ["\(try Products.path("rouse-example-handler"))", "--mode", "report", "--quiet", \
            "--voip-connect", "\(peer.target)", "--keep-alive", "600", "--log", "\(directory)/idle.log"]
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
        try await peer.accept()
        try await eventually("handler registered and suspended") {
            let handler = (try? await AgentNetworkTests.status(socket: socket))?.handlers.first
            return handler?.connected == true && handler?.state == "suspended"
        }
        let pid = agent.process.processIdentifier
        guard try await ProcessProbe.settle(pid, quiet: .seconds(6), limit: .seconds(45)) else {
            throw FixtureError("the agent never went quiet")
        }
        let before = AgentIdleTests.switches(pid: pid)
        try await Task.sleep(for: .seconds(10))
        let after = AgentIdleTests.switches(pid: pid)
        let woke = after.map { ($0.key, $0.value - (before[$0.key] ?? 0)) }.filter { $0.1 > 0 }.sorted { $0.1 > $1.1 }
        #expect(woke.reduce(0) { $0 + $1.1 } <= 1, "wake-ups in 10 s by thread: \(woke)")
        if let path = ProcessInfo.processInfo.environment["ROUSE_VOIP_IDLE_REPORT"] {
            try? Data("wake-ups in 10 s: \(woke.reduce(0) { $0 + $1.1 }) \(woke)\n".utf8).write(
                to: URL(fileURLWithPath: path))
        }
        // And the watch is live: data wakes the handler, which reports the call.
        peer.send("INVITE sip:idle SIP/2.0\r\n\r\n")
        try await eventually("woken by data and reported") {
            let log = (try? String(contentsOfFile: "\(directory)/idle.log", encoding: .utf8)) ?? ""
            return log.contains("reported wake=wake-1")
        }
    }
}
