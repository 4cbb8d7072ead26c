import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Testing

/// What a handler may ask, and an agent
/// that keeps listening through a connection flood.
@Suite("IPC: handlers are not admins, floods do not stop the listener", .serialized, .stopsWhatItStarts)
struct AgentIPCGuardTests {
    /// A handler (here as root, with allow-root) sees only itself in the status and cannot stop another handler:
    /// neither on its own connection nor on a second one it opens through the socket path.
    @Test(.timeLimit(.minutes(1)))
    func aHandlerSeesOnlyItselfAndCannotActAsAdmin() async throws {
        let harness = try await AgentHarness { directory in
            [
                // Not frozen between its steps (a report, a status, two admin tries on two connections): on a
                // loaded machine they took longer than the harness's 300 ms idle time, and a frozen nosy tries
                // nothing more.
                try AgentHarness.handler(
                    "nosy", mode: "report", directory: directory, pushTypes: ["voip"],
                    arguments: ["--try-admin", "victim"]
                ) { $0.suspendAfter = .seconds(3600) },
                try AgentHarness.handler("victim", mode: "report", directory: directory, pushTypes: ["voip"]) {
                    $0.suspendAfter = .seconds(3600)
                },
            ]
        }
        try await harness.admin(.userControl(.init(handler: "victim", state: "started")))
        try await harness.waitForLine("victim", "registered ")
        try await harness.push("nosy", type: "voip")
        try await harness.waitForLine("nosy", "admin socket=")
        let log = harness.log("nosy")
        #expect(log.contains { $0.hasPrefix("askedStatus handlers=nosy device=- ") }, "\(log)")
        #expect(log.contains { $0.hasPrefix("admin own=unknownType ") }, "\(log)")
        #expect(log.contains { $0.hasPrefix("admin socket=notAuthorized ") }, "\(log)")
        let victim = await harness.handlerStatus("victim")
        #expect(victim?.userStopped == false && victim?.connected == true, "\(String(describing: victim))")
    }

    /// Connections from one ordinary user are capped (8) before the agent opens anything for them; connections
    /// from root past the descriptor limit (prlimit) take the agent to EMFILE, where accept backs off instead of
    /// ending: afterwards the listener answers, and a push sent during the flood is handed over and acknowledged.
    @Test(.timeLimit(.minutes(2)))
    func aConnectionFloodToEMFILELeavesTheListenerAnsweringAndLosesNoPush() async throws {
        guard getuid() == 0 else { throw FixtureError("a flood as another user needs root (uid \(getuid()))") }
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw FixtureError("\(python) is missing: run deploy/install-deps.sh")
        }
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = try await Provider.connect(port: gateway.providerPort)
        defer {
            provider.client.close()
            Task { await gateway.shutdown(gracePeriod: .seconds(1)) }
        }
        chmod(directory, 0o755)
        let log = try Self.writeVoIPHandler(in: directory)
        let socket = directory + "/agent.sock"
        let limit = 128
        let agent = try await AgentProcess(
            executable: "/usr/bin/prlimit",
            arguments: [
                "--nofile=\(limit):\(limit)", "--", try Products.path("rouse-agent"),
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
            ], stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        let pid = agent.process.processIdentifier
        @Sendable func openDescriptors() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        }
        try await eventually("channel open", timeout: .seconds(30)) {
            let status = try? await AgentNetworkTests.status(socket: socket)
            return status?.channel == "open" && status?.tokens?.isEmpty == false
        }
        let topic = "com.example.rouse.voip"
        let token = try #require(try await AgentNetworkTests.status(socket: socket).tokens?[topic])
        // Opens connections (non-blocking connect: a full backlog ends the flood) and holds them.
        let flooder = """
            import socket, sys, time
            held = []
            for _ in range(int(sys.argv[2])):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.setblocking(False)
                try:
                    s.connect(sys.argv[1])
                except OSError:
                    break
                held.append(s)
            print(len(held), flush=True)
            time.sleep(3600)
            """
        // 1. nobody: at most 8 held by the agent, nothing near its limit.
        let before = openDescriptors()
        let nobody = try ChildProcess.start(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", python, "-c", flooder, socket, "200"],
            stdout: .lines)
        _ = await nobody.lines.first(timeout: .seconds(20)) { _ in true }
        try await eventually("the agent answers while nobody floods") {
            (try? await AgentNetworkTests.status(socket: socket).channel) == "open"
        }
        #expect(openDescriptors() - before <= 8 * 2 + 4, "descriptors: \(before) → \(openDescriptors())")
        nobody.kill()

        // 2. root (no quota): the agent reaches its descriptor limit; a push arrives meanwhile.
        let root = try ChildProcess.start(python, ["-c", flooder, socket, "400"], stdout: .lines)
        _ = await root.lines.first(timeout: .seconds(20)) { _ in true }
        try await eventually("EMFILE reached") { openDescriptors() >= limit - 2 }
        #expect(await provider.push(token: token, topic: topic, type: "voip", payload: #"{"n":1}"#) == 200)
        try await Task.sleep(for: .milliseconds(500))
        root.kill()
        // Listening again, the push handed over and reported, nothing left at the gateway.
        try await eventually("the listener answers after the flood", timeout: .seconds(20)) {
            (try? await AgentNetworkTests.status(socket: socket).channel) == "open"
        }
        try await eventually("the push reported", timeout: .seconds(20)) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("reported id=")
        }
        try await eventually("acknowledged") { try AgentHarness.pending(gateway) == 0 }
        let stderr = (try? String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)) ?? ""
        #expect(stderr.contains("IPC accept failed: backing off"), "\(stderr.suffix(2000))")
    }

    /// A push arrives while the agent has no descriptor to spare (its soft limit lowered below its lowest free
    /// descriptor with `prlimit --pid`): every step of the launch that opens one (reading the handler's account in
    /// /etc/passwd, the handler's socket pair, its cgroup files, its output stream) fails with EMFILE, and that is a
    /// shortage to wait out, not a refusal: the launch is tried again, and once the limit is back the push is
    /// handed over and acknowledged. (Refused as "user root does not exist", it was consumed and lost.)
    @Test(.timeLimit(.minutes(2)))
    func aLaunchShortOfDescriptorsIsTriedAgainAndLosesNoPush() async throws {
        guard getuid() == 0 else { throw FixtureError("prlimit on another process needs root (uid \(getuid()))") }
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = try await Provider.connect(port: gateway.providerPort)
        defer {
            provider.client.close()
            Task { await gateway.shutdown(gracePeriod: .seconds(1)) }
        }
        chmod(directory, 0o755)
        let log = try Self.writeVoIPHandler(in: directory)
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            executable: try Products.path("rouse-agent"),
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
            ], stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        let pid = agent.process.processIdentifier
        try await eventually("channel open", timeout: .seconds(30)) {
            let status = try? await AgentNetworkTests.status(socket: socket)
            return status?.channel == "open" && status?.tokens?.isEmpty == false
        }
        let topic = "com.example.rouse.voip"
        let token = try #require(try await AgentNetworkTests.status(socket: socket).tokens?[topic])
        @Sendable func stderr() -> String {
            (try? String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)) ?? ""
        }
        // Soft limit 3: descriptors 0–2 are taken, so every new one fails with EMFILE; the open ones stay.
        try Self.prlimit(pid: pid, soft: 3)
        #expect(await provider.push(token: token, topic: topic, type: "voip", payload: #"{"n":1}"#) == 200)
        try await eventually("the launch waits out the shortage", timeout: .seconds(20)) {
            stderr().contains("launch failed: trying again")
        }
        #expect(!stderr().contains("launch refused"), "\(stderr().suffix(2000))")
        try Self.prlimit(pid: pid, soft: 1024)
        try await eventually("the push reported", timeout: .seconds(20)) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("reported id=")
        }
        try await eventually("acknowledged") { try AgentHarness.pending(gateway) == 0 }
    }

    /// The `voip` handler file (the example handler in report mode, as root) in `directory`/handlers; its log's path.
    private static func writeVoIPHandler(in directory: String) throws -> String {
        let log = directory + "/voip.log"
        let file = """
            topic = "com.example.rouse"
            command = ["\(try Products.path("rouse-example-handler"))", "--mode", "report", "--log", "\(log)"]
            push-types = ["voip"]
            allow-root = true
            """
        try Data(file.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/voip.toml"))
        return log
    }

    /// Sets `pid`'s soft descriptor limit (its hard limit unchanged).
    private static func prlimit(pid: Int32, soft: Int) throws {
        let result = try ChildProcess.runSync("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(soft):"])
        guard result.status == 0 else {
            throw FixtureError("prlimit --pid \(pid) --nofile=\(soft): exited \(result.status): \(result.stderr)")
        }
    }
}
