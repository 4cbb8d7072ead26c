import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseGateway
import RouseHTTP2
import RouseSystem
import RouseTestSupport
import Testing

/// The agent's process against its own handlers and its command line: handler output never becomes the agent's log,
/// the log writer survives a stream that went away, numbers of seconds and enrollment values are checked.
@Suite("rouse-agent hardening: handler output, log streams, command line", .serialized, .stopsWhatItStarts)
struct AgentHardeningTests {
    /// A handler that writes a line looking like one of the agent's JSON log lines, on stdout and stderr: the agent's
    /// log shows it only as the `line` of a `handler output` entry, never as a line of its own.
    @Test(.timeLimit(.minutes(2)))
    func handlerOutputIsTheAgentsMetadataNeverItsOwnLogLine() async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = try await Provider.connect(port: gateway.providerPort)
        defer {
            provider.client.close()
            Task { await gateway.shutdown(gracePeriod: .seconds(1)) }
        }
        let forged = #"{"level":"critical","label":"rouse.agent","message":"forged"}"#
        let script = directory + "/handler.sh"
        try Data("echo '\(forged)'\necho '\(forged)' >&2\nsleep 30\n".utf8).write(to: URL(fileURLWithPath: script))
        let file = """
            topic = "com.example.rouse"
            command = ["/bin/sh", "\(script)"]
            push-types = ["voip"]
            allow-root = true
            """
        try Data(file.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/voip.toml"))
        let socket = directory + "/agent.sock"
        let stderr = directory + "/agent.stderr"
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret-file", try Self.secretFile(gateway, directory), "--handlers",
                directory + "/handlers", "--state-dir", directory + "/state", "--socket", socket,
                "--assume-reachable", "--json",
            ], stderrPath: stderr)
        defer { agent.kill() }
        try await eventually("channel open", timeout: .seconds(30)) {
            let status = try? await AgentNetworkTests.status(socket: socket)
            return status?.channel == "open" && status?.tokens?.isEmpty == false
        }
        let topic = "com.example.rouse.voip"
        let token = try #require(try await AgentNetworkTests.status(socket: socket).tokens?[topic])
        #expect(await provider.push(token: token, topic: topic, type: "voip", payload: #"{"n":1}"#) == 200)
        @Sendable func entries() -> [[String: Any]] {
            ((try? String(contentsOfFile: stderr, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        try await eventually("both handler lines logged", timeout: .seconds(20)) {
            entries().filter { $0["message"] as? String == "handler output" }.count >= 2
        }
        let output = entries().filter { $0["message"] as? String == "handler output" }
        #expect(
            output.allSatisfy { $0["handler"] as? String == "voip" && $0["line"] as? String == forged }, "\(output)")
        #expect(!entries().contains { $0["message"] as? String == "forged" }, "a handler wrote the agent's log")
    }

    /// The agent's log on a stream that fails (a pipe whose reader is gone: EPIPE; /dev/full: ENOSPC), in JSON and
    /// plain form: lines are lost, the agent is not (it answers status).
    @Test(.timeLimit(.minutes(2)), arguments: ["closed-pipe", "full"], [true, false])
    func aFailingLogStreamDoesNotEndTheAgent(_ stream: String, _ json: Bool) async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let socket = directory + "/agent.sock"
        // The agent exec'd by Python with stderr on the failing stream and SIGPIPE at its default (as a service
        // manager starts it).
        let launcher = """
            import os, signal, sys
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            if sys.argv[1] == "full":
                fd = os.open("/dev/full", os.O_WRONLY)
            else:
                r, fd = os.pipe()
                os.close(r)
            os.dup2(fd, 2)
            os.execv(sys.argv[2], sys.argv[2:])
            """
        let agent = try await AgentProcess(
            executable: "/usr/bin/python3",
            arguments: [
                "-c", launcher, stream, try Products.path("rouse-agent"),
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret-file", try Self.secretFile(gateway, directory), "--handlers",
                directory + "/handlers", "--state-dir", directory + "/state", "--socket", socket,
                "--assume-reachable", "--log-level", "debug",
            ] + (json ? ["--json"] : []), stderrPath: directory + "/unused.stderr")
        defer { agent.kill() }
        try await eventually("channel open (the agent logged all the way)", timeout: .seconds(30)) {
            (try? await AgentNetworkTests.status(socket: socket))?.channel == "open"
        }
        #expect(agent.process.isRunning)
    }

    /// A number of seconds that cannot be a Duration, and enrollment values that would add lines to a unit drop-in:
    /// refused with the option's name, exit 64, no trap.
    @Test(arguments: [
        (
            ["rouse-agent", "--gateway", "https://x", "--preserve-timeout-seconds", "1e300"],
            "--preserve-timeout-seconds"
        ),
        (
            ["rouse-agent", "--gateway", "https://x", "--restoration-grace-seconds", "nan"],
            "--restoration-grace-seconds"
        ),
        (["rouse-agent", "--gateway", "https://x", "--activation-hook-timeout", "0"], "--activation-hook-timeout"),
        (
            [
                "rouse", "agent", "enroll", "--gateway", "https://x\nExecStartPre=/bin/true", "--secret-file",
                "/dev/null",
            ],
            "--gateway holds a control character"
        ),
        (
            ["rouse", "agent", "enroll", "--gateway", "https://x", "--ca", "/a\rb", "--secret-file", "/dev/null"],
            "--ca holds a control character"
        ),
    ])
    func commandLineValuesAreCheckedWithAPreciseError(_ command: [String], _ expected: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-cli-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try ChildProcess.start(
            try Products.path(command[0]), Array(command.dropFirst()), stderr: .file(directory + "/stderr"))
        let status = try await child.wait(timeout: .seconds(30))
        let stderr = (try? String(contentsOfFile: directory + "/stderr", encoding: .utf8)) ?? ""
        #expect(status == 64, "exit \(status): \(stderr)")
        #expect(stderr.contains(expected), "\(stderr)")
    }

    static func secretFile(_ gateway: Gateway, _ directory: String) throws -> String {
        let path = directory + "/enroll-secret"
        try Data(try gateway.makeEnrollmentSecret().utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
