import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import RouseWire
import Testing

/// The C (`clients/c`, librouse-handler.so.0) and Python (`clients/python/rouse_handler.py`) client libraries,
/// each driving its example handler against the built `rouse-agent` (a real process, launching the handler): the
/// handler registers, is woken by a VoIP push and reports the call in time (no strike, the push acknowledged),
/// gets the call's session activated and ends the call, is granted an ambient session it asks for, and completes
/// a background push.
@Suite(
    "Handler client libraries in C and Python against rouse-agent", .serialized, .stopsWhatItStarts,
    .timeLimit(.minutes(3)))
struct HandlerLibraryTests {
    enum Language: String, CaseIterable, Sendable { case c, python }

    /// Builds librouse-handler.so.0 and the C example handler with the system `cc` into `directory` (as
    /// `deploy/package.sh` does); returns the handler's path.
    static func buildC(into directory: String) async throws -> String {
        let make = try await ChildProcess.run(
            "/usr/bin/make", ["-s", "-C", Repository.root + "/clients/c", "OUT=" + directory], timeout: .seconds(120))
        guard make.status == 0 else { throw FixtureError("make clients/c failed: \(make.stderr)") }
        let handler = directory + "/example-handler"
        let cc = try await ChildProcess.run(
            "/usr/bin/cc",
            [
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", Repository.root + "/clients/c", "-o", handler,
                Repository.root + "/clients/c/example-handler.c", "-L", directory, "-lrouse-handler",
                "-Wl,-rpath," + directory,
            ], timeout: .seconds(120))
        guard cc.status == 0 else { throw FixtureError("cc example-handler.c failed: \(cc.stderr)") }
        return handler
    }

    /// The example handler's command in `language`, logging to `log`.
    static func command(_ language: Language, name: String, log: String, directory: String) async throws -> [String] {
        switch language {
        case .c:
            return [try await buildC(into: directory), name, log]
        case .python:
            try ChildProcess.require("/usr/bin/python3")
            return [
                "/usr/bin/python3", Repository.root + "/clients/python/example_handler.py", "--name", name, "--log",
                log,
            ]
        }
    }

    /// Every example frame of docs/handler-protocol.md (both directions, as a peer could send either), and frames a
    /// hostile or broken peer could send, through the library's decoder (`clients/*/tests/decode*`): the examples
    /// decode to exactly their members, the garbage is refused (the C one built with AddressSanitizer and
    /// UndefinedBehaviorSanitizer, so a read out of bounds fails the test).
    @Test(arguments: Language.allCases)
    func decodesEverySpecificationExampleAndRefusesGarbage(_ language: Language) async throws {
        let specification = try String(
            contentsOfFile: Repository.root + "/docs/handler-protocol.md", encoding: .utf8)
        let examples = specification.split(separator: "\n").filter { $0.hasPrefix("{") }.map(String.init)
        #expect(examples.count > 40)
        var garbage = [
            #"{"type":"push","v":2}"#, #"{"v":1}"#, #"["type","v"]"#, #"{"type":"push","v":1"#,
            #"{"type":"push","v":1,}"#, #"{"type":"push","v":01}"#, #"{"type":"push","v":1} x"#,
            "{\"type\":\"push\",\"v\":1,\"s\":\"\u{01}\"}", #"{"type":5,"v":1}"#,
        ]
        if language == .c {
            // Python's json module takes lone surrogates and any depth (up to its recursion limit); the C decoder
            // refuses both (nesting beyond 32).
            garbage += [
                #"{"type":"push","v":1,"s":"\ud800"}"#,
                #"{"a":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
                    + #","type":"x","v":1}"#,
            ]
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-decode-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let command: [String]
        switch language {
        case .c:
            let decoder = directory + "/decode-frames"
            let cc = try await ChildProcess.run(
                "/usr/bin/cc",
                [
                    "-std=c11", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", "-I", Repository.root + "/clients/c", "-o", decoder,
                    Repository.root + "/clients/c/tests/decode-frames.c",
                    Repository.root + "/clients/c/rouse-handler.c",
                    "-lm",
                ], timeout: .seconds(120))
            guard cc.status == 0 else { throw FixtureError("cc decode-frames.c failed: \(cc.stderr)") }
            command = [decoder]
        case .python:
            command = ["/usr/bin/python3", Repository.root + "/clients/python/tests/decode_frames.py"]
        }
        let run = try await ChildProcess.run(
            command[0], Array(command.dropFirst()), stdin: Data((examples + garbage).joined(separator: "\n").utf8),
            timeout: .seconds(60))
        #expect(run.status == 0, "\(run.stderr)")
        let decoded = run.stdout.split(separator: "\n").map(String.init)
        try #require(decoded.count == examples.count + garbage.count, "\(run.stdout)\n\(run.stderr)")
        for (example, output) in zip(examples, decoded) {
            let expected = try JSONSerialization.jsonObject(with: Data(example.utf8)) as? NSDictionary
            let got = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? NSDictionary
            #expect(got == expected, "\(example)\ndecoded as\n\(output)")
        }
        for (input, output) in zip(garbage, decoded.suffix(garbage.count)) {
            #expect(output.hasPrefix(#"{"refused""#), "\(input) was not refused: \(output)")
        }
    }

    @Test(arguments: Language.allCases)
    func registersReportsInTimeIsActivatedAndCompletes(_ language: Language) async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = try await Provider.connect(port: gateway.providerPort)
        defer {
            provider.client.close()
            Task { await gateway.shutdown(gracePeriod: .seconds(1)) }
        }
        let log = directory + "/phone.log"
        let command = try await Self.command(language, name: "phone", log: log, directory: directory)
        let handler = """
            topic = "com.example.rouse"
            command = [\(command.map { "\"\($0)\"" }.joined(separator: ", "))]
            push-types = ["voip", "background"]
            allow-root = true
            [limits]
            voip-deadline-seconds = 5
            """
        try Data(handler.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/phone.toml"))
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
            ], stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        @Sendable func lines() -> [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        @Sendable func status() async throws -> AgentStatus { try await AgentNetworkTests.status(socket: socket) }
        try await eventually("tokens in the agent's state") {
            let tokens = try await status().tokens
            return tokens?["com.example.rouse.voip"] != nil && tokens?["com.example.rouse"] != nil
        }
        let tokens = try #require(try await status().tokens)
        let voip = try #require(tokens["com.example.rouse.voip"])
        let background = try #require(tokens["com.example.rouse"])

        // A VoIP push launches the handler, which reports the call at once.
        #expect(
            await provider.push(
                token: voip, topic: "com.example.rouse.voip", type: "voip", payload: #"{"call":{"id":"c1"}}"#) == 200)
        try await eventually("the call reported, its session activated, the call ended") {
            lines().contains { $0.hasPrefix("ended call=call-") }
        }
        #expect(lines().contains("registered handler=phone launchReason=voipPush"), "\(lines())")
        #expect(lines().contains { $0.hasPrefix("reported push=") && $0.contains(#"{"call":{"id":"c1"}}"#) })
        #expect(lines().contains("activation session=call event=callActivated"), "\(lines())")
        #expect(lines().contains("activate session=chime event=granted"), "\(lines())")
        // Acknowledged: the report came (a kill at the deadline would acknowledge too, with a strike).
        try await eventually("the VoIP push acknowledged") { try AgentHarness.pending(gateway) == 0 }

        // A background push, completed.
        #expect(
            await provider.push(
                token: background, topic: "com.example.rouse", type: "background",
                payload: #"{"aps":{"content-available":1}}"#) == 200)
        try await eventually("the background push completed") {
            lines().contains { $0.hasPrefix("completed push=") }
        }
        try await eventually("the background push acknowledged") { try AgentHarness.pending(gateway) == 0 }
        let entry = try #require(try await status().handlers.first { $0.name == "phone" })
        #expect(entry.strikes == 0)
        #expect(entry.owedReports.isEmpty)
        #expect(entry.openBackgroundPushes.isEmpty)
        #expect(!lines().contains { $0.hasPrefix("error") }, "\(lines())")

        // The user stops it: `willTerminate` through the library (C rouse_event_will_terminate, Python
        // on_will_terminate), and a clean exit inside the 5 s grace: no kill.
        let control = try AgentClient(socketPath: socket)
        defer { control.close() }
        try control.send(.userControl(.init(handler: "phone", state: "stopped")))
        try await eventually("willTerminate handled") {
            lines().contains { $0.hasPrefix("willTerminate reason=user stopped seconds=5") }
        }
        try await eventually("exited within the grace, not killed") {
            ((try? String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)) ?? "")
                .contains("handler exited within the termination grace")
        }
        #expect(
            !((try? String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)) ?? "")
                .contains("no exit within the termination grace"))
    }

    /// The socket-woken messages (docs/handler-protocol.md 6.12, 6.13, 7.14) through each library, against the built
    /// `rouse-agent`: the example handler connects to a TCP peer in the test and hands the connection over
    /// (`addVoIPSocket` answered `voipSocket`), a 300 s keep-alive is refused with `keepAliveTooShort`, 600 s taken;
    /// frozen, it is woken by an OPTIONS on its socket (`voipWakeHandled`), then by an INVITE (reported with the
    /// wake's id, `200 OK` answered on the same connection); SIGKILLed, it is relaunched by the next INVITE (launch
    /// reason `voipSocket`), takes its connection back (`returned`, the descriptor received) and answers on it.
    /// No strike.
    @Test(arguments: Language.allCases)
    func watchedSocketWakesTheFrozenHandlerAndComesBackAfterARelaunch(_ language: Language) async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let peer = try VoIPPeer()
        let log = directory + "/phone.log"
        var command = try await Self.command(language, name: "phone", log: log, directory: directory)
        command += language == .c ? [peer.target] : ["--voip-connect", peer.target]
        let handler = """
            topic = "com.example.rouse"
            command = [\(command.map { "\"\($0)\"" }.joined(separator: ", "))]
            push-types = ["voip"]
            allow-root = true
            [limits]
            voip-deadline-seconds = 5
            suspend-after-seconds = 1
            """
        try Data(handler.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/phone.toml"))
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
            ], stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        @Sendable func lines() -> [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        @Sendable func status() async throws -> AgentStatus.Handler? {
            try await AgentNetworkTests.status(socket: socket).handlers.first { $0.name == "phone" }
        }
        @Sendable func waitFor(_ prefix: String, count: Int = 1) async throws {
            try await eventually("log line '\(prefix)' ×\(count); log: \(lines())") {
                lines().filter { $0.hasPrefix(prefix) }.count >= count
            }
        }
        @Sendable func suspended() async throws {
            try await eventually("the handler frozen") { try await status()?.state == "suspended" }
        }
        let client = try AgentClient(socketPath: socket)
        defer { client.close() }
        try client.send(.userControl(.init(handler: "phone", state: "started")))

        try await waitFor("voipSocket id=1 kind=stream returned=0 fd=yes")
        try await peer.accept()
        try await waitFor("keepAliveSet seconds=600")
        let refused = lines().first { $0.hasPrefix("error requestID=") } ?? ""
        #expect(
            refused.contains("keepAliveTooShort keep-alive interval 300.0 s is below the minimum of 600 s"),
            "\(lines())")
        try await suspended()

        peer.send("OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nCall-ID: o1\r\n\r\n")
        try await waitFor("wakeHandled id=wake-1")
        #expect(lines().contains("wake id=wake-1 mustReport=1 data=OPTIONS sip:bob@127.0.0.1 SIP/2.0"), "\(lines())")
        try await suspended()

        peer.send(AgentVoIPSocketTests.invite)
        try await waitFor("reported wake=wake-2")
        #expect(peer.read(until: "200 OK").contains("SIP/2.0 200 OK"))
        try await suspended()
        #expect(!lines().contains { $0.contains("launchReason=voipSocket") }, "thawed, not relaunched")

        let pid = try #require(try await status()?.pid)
        kill(pid, SIGKILL)
        try await eventually("gone") { try await status()?.state == "notRunning" }
        peer.send(AgentVoIPSocketTests.invite)
        try await waitFor("reported wake=wake-3")
        #expect(lines().contains("registered handler=phone launchReason=voipSocket"), "\(lines())")
        #expect(lines().contains("voipSocket id=1 kind=stream returned=1 fd=yes"), "\(lines())")
        #expect(lines().contains { $0.hasPrefix("wake id=wake-3 mustReport=1 data=INVITE sip:bob@127.0.0.1") })
        #expect(peer.read(until: "200 OK").contains("SIP/2.0 200 OK"), "answered on the returned connection")
        let entry = try #require(try await status())
        #expect(entry.strikes == 0)
        #expect(entry.owedReports.isEmpty)
        #expect(lines().filter { $0.hasPrefix("error") }.count == 1, "only the refused keep-alive: \(lines())")
    }
}
