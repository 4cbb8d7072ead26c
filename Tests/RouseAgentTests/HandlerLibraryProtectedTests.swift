import Foundation
import RouseGateway
import RouseTestSupport
import Testing

/// The protected-file calls of the C (`clients/c`) and Python (`clients/python`) client libraries against the built
/// `rouse-agent`: each library's test program (`clients/c/tests/protected-files.c`,
/// `clients/python/tests/protected_files.py`) registers as a handler and writes, reads, re-classes, opens (a
/// `complete-unless-open` file, written and read through its handle), closes and removes protected files; the agent's
/// answers, printed one a line, are the same for both.
@Suite(
    "Protected files through the C and Python client libraries", .serialized, .stopsWhatItStarts,
    .timeLimit(.minutes(3)))
struct HandlerLibraryProtectedTests {
    static let expected = [
        "write ok", "read data=hello", "reclass ok", "write-bad-class error=badRequest", "open handle",
        "write-open ok", "read-open data=part 1", "close ok", "read-closed error=notFound", "remove ok",
        "read-removed error=notFound",
    ]

    @Test(arguments: HandlerLibraryTests.Language.allCases)
    func protectedFilesRoundTrip(_ language: HandlerLibraryTests.Language) async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let command: [String]
        switch language {
        case .c:
            _ = try await HandlerLibraryTests.buildC(into: directory)
            let program = directory + "/protected-files"
            let cc = try await ChildProcess.run(
                "/usr/bin/cc",
                [
                    "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", Repository.root + "/clients/c", "-o", program,
                    Repository.root + "/clients/c/tests/protected-files.c", "-L", directory, "-lrouse-handler",
                    "-Wl,-rpath," + directory,
                ], timeout: .seconds(120))
            guard cc.status == 0 else { throw FixtureError("cc protected-files.c failed: \(cc.stderr)") }
            command = [program]
        case .python:
            try ChildProcess.require("/usr/bin/python3")
            command = ["/usr/bin/python3", Repository.root + "/clients/python/tests/protected_files.py"]
        }
        // The program connects itself: its executable (and script) are the handler's command.
        let handler = """
            topic = "com.example.vault"
            command = [\(command.map { "\"\($0)\"" }.joined(separator: ", "))]
            push-types = ["background"]
            allow-root = true
            """
        try Data(handler.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/vault.toml"))
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
            ], stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        let run = try await ChildProcess.run(
            command[0], Array(command.dropFirst()) + [socket, "vault"], timeout: .seconds(60))
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(lines == Self.expected, "\(run.stderr)")
        // Sealed by the agent, not stored in the clear: the file on disk is a sealed file, not the text written.
        let stored = directory + "/state/protected/vault/recording"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: stored))
        #expect(bytes.starts(with: Array("RSTATE".utf8)))
        #expect(bytes.range(of: Data("part 1".utf8)) == nil)
    }
}
