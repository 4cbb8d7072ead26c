import Foundation
import RouseAPNs
import RouseMockAPNs
import RouseTestSupport
import Testing

@Suite("rouse send (the built executable as a child process)", .timeLimit(.minutes(2)))
struct SendCommandTests {
    typealias F = MockFixture

    /// The `rouse` executable next to the test bundle (`swift build --build-tests` builds it).
    static var rouse: String {
        get throws {
            let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            let path = directory.appendingPathComponent("rouse").path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw MissingExecutable(
                    description: "rouse executable not found at \(path): build it first (swift build --build-tests)")
            }
            return path
        }
    }

    static func base(_ fixture: F) -> [String] {
        [
            "--topic", F.bundle, "--env", "https://127.0.0.1:\(fixture.server.port)", "--ca-file",
            Repository.cert("ca.pem"),
        ]
    }

    static let tokenAuth = [
        "--auth-key", Repository.cert("apns-key.p8"), "--key-id", "ROUSEKEY01", "--team-id", "ROUSETEAM1",
    ]

    @Test func voipDelivered() async throws {
        let fixture = try F()
        let output = try await ChildProcess.run(
            try Self.rouse, ["send", "voip", "--token", F.token(1)] + Self.base(fixture) + Self.tokenAuth)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("delivered  \(F.token(1))"))
        #expect(fixture.mock.records().first?.header("apns-expiration") == "0")
        await fixture.shutdown()
    }

    @Test func jsonLinesPruneFileAndExitCodeForRejections() async throws {
        let fixture = try F()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-send-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tokens = directory.appendingPathComponent("tokens.txt").path
        let prune = directory.appendingPathComponent("prune.tsv").path
        // Comments, blank lines, CRLF line ends and blanks around tokens are what hand-edited files hold.
        try ["# tokens", F.token(1), "", " \t\(F.goneToken)\t \r", "  # \(F.token(2)) left out", F.expiredToken + "  "]
            .joined(separator: "\n").write(toFile: tokens, atomically: true, encoding: .utf8)
        let config = directory.appendingPathComponent("send.conf").path
        try """
        # credentials kept out of the command line
        auth-key = \(Repository.cert("apns-key.p8"))
        key-id = ROUSEKEY01
        team-id = ROUSETEAM1
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let output = try await ChildProcess.run(
            try Self.rouse,
            ["send", "voip", "--tokens-file", tokens, "--json", "--prune-file", prune, "--config", config]
                + Self.base(fixture))
        #expect(output.status == 1, "\(output.stderr)")
        let lines = output.stdout.split(separator: "\n")
        #expect(lines.count == 4)
        #expect(lines.filter { $0.contains(#""outcome":"delivered""#) }.count == 1)
        #expect(lines.contains { $0.contains(#""reason":"Unregistered","timestamp":\#(F.goneSince)"#) })
        #expect(lines.last?.hasPrefix(#"{"summary":{"total":3,"delivered":1"#) == true)
        let pruned = try String(contentsOfFile: prune, encoding: .utf8)
        #expect(pruned.contains("\(F.goneToken)\tUnregistered\t\(F.goneSince)\n"))
        #expect(pruned.contains("\(F.expiredToken)\tExpiredToken\t\n"))
        try? FileManager.default.removeItem(at: directory)
        await fixture.shutdown()
    }

    @Test func certificateAuthOverCurl() async throws {
        let fixture = try F()
        let output = try await ChildProcess.run(
            try Self.rouse,
            [
                "send", "voip", "--token", F.token(2), "--cert", Repository.cert("provider.p12"), "--password",
                "rouse-test", "--transport", "curl",
            ] + Self.base(fixture))
        #expect(output.status == 0, "\(output.stdout) \(output.stderr)")
        await fixture.shutdown()
    }

    @Test(arguments: [
        (["send", "voip", "--token", "00ab", "--topic", "com.example.rouse"], "no credentials"),
        (
            [
                "send", "voip", "--topic", "com.example.rouse", "--auth-key", "/nonexistent", "--key-id", "A",
                "--team-id", "B", "--token", "00",
            ], "cannot read the key file"
        ),
        (
            ["send", "voip", "--token", "00ab", "--topic", "x", "--env", "ftp://nowhere", "--cert", "/etc/hostname"],
            "--env must be"
        ),
    ])
    func usageErrorsAreOneLineAndExit64(_ arguments: [String], _ message: String) async throws {
        let output = try await ChildProcess.run(try Self.rouse, arguments)
        #expect(output.status == 64)
        #expect(output.stderr.contains(message), "\(output.stderr)")
        #expect(output.stderr.split(separator: "\n").count == 1)
    }

    /// `rouse send` is parsed against `SendCommand` alone first (a one-shot's start-up); what that parse does not
    /// turn into a send (help, a parse error, a request of ArgumentParser's) is parsed from the root again, so that
    /// every message names `rouse send` as the full parse does.
    @Test(arguments: [
        (["send", "voip", "--help"], 0, "USAGE: rouse send [<options>] <kind>"),
        (["send", "-h"], 0, "USAGE: rouse send [<options>] <kind>"),
        (["send", "voip", "--bogus"], 64, "Usage: rouse send [<options>] <kind>"),
        (["send"], 64, "Usage: rouse send [<options>] <kind>"),
        (["send", "--version"], 0, "development build"),
    ])
    func helpAndParseErrorsNameRouseSend(_ arguments: [String], _ status: Int32, _ text: String) async throws {
        let output = try await ChildProcess.run(try Self.rouse, arguments)
        #expect(output.status == status, "\(output.stdout) \(output.stderr)")
        #expect((output.stdout + output.stderr).contains(text), "\(output.stdout) \(output.stderr)")
        #expect(!(output.stdout + output.stderr).contains("USAGE: send"), "\(output.stdout)")
    }

    @Test func connectFailureExits2() async throws {
        let output = try await ChildProcess.run(
            try Self.rouse,
            [
                "send", "voip", "--token", F.token(1), "--topic", F.bundle, "--env", "https://127.0.0.1:1", "--ca-file",
                Repository.cert("ca.pem"), "--deadline", "5",
            ] + Self.tokenAuth)
        #expect(output.status == 2)
        #expect(output.stdout.contains("processed: no"))
    }
}

/// The `rouse` executable is not where the tests expect it.
struct MissingExecutable: Error, CustomStringConvertible {
    let description: String
}
