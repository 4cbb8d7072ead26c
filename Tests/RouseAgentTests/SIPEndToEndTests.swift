import Foundation
import RouseAgent
import RouseGateway
import RouseHTTP2
import RouseSIPLab
import RouseTestSupport
import Testing

/// A SIP call reaches a softphone, with real SIP software from Debian on loopback (`RouseSIPLab`): Kamailio running
/// the committed `deploy/sip/kamailio-rouse-push.cfg`, baresip as the softphone, SIPp as the caller; the gateway
/// (in this process), the built `rouse-agent` and `rouse` (the push sender Kamailio runs), and the handler in Python
/// (`deploy/sip/rouse-sip-handler.py` on `clients/python/rouse_handler.py`) or in C (`deploy/sip/rouse-sip-handler.c`
/// on librouse-handler.so.0), one test case each.
///
/// S0: baresip registered and awake: INVITE → 200 OK. S1: no softphone running: Kamailio suspends the INVITE and
/// runs `rouse send voip`; the agent launches the handler, which reports the call at once and starts baresip; its
/// REGISTER resumes the INVITE, baresip answers; after the call the handler quits baresip, ends the call and exits.
@Suite(
    "SIP end to end: Kamailio, baresip, SIPp and a push-woken handler in Python and in C", .serialized,
    .stopsWhatItStarts,
    .timeLimit(.minutes(4)))
struct SIPEndToEndTests {
    static let calls = 20

    /// Processes of this test's scope (the tag in their environment) whose command name is one of `names`.
    static func running(_ names: Set<String>) -> [String] {
        guard let scope = TestScope.current else { return [] }
        let tag = "\(TestScope.variable)=\(scope.id)"
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
        return pids.compactMap { pid in
            guard
                let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines), names.contains(comm),
                let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ"),
                environ.split(separator: 0).contains(where: { String(decoding: $0, as: UTF8.self) == tag })
            else { return nil }
            guard AgentRestartTests.alive(pid) else { return nil }
            return "\(comm)[\(pid)]"
        }
    }

    @Test(arguments: SIPLab.Handler.allCases)
    func awakePhoneAnswersAndSleepingPhoneIsWokenByAPushForEveryCall(_ handler: SIPLab.Handler) async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let lab = try SIPLab(directory: directory + "/sip", files: Repository.root + "/deploy/sip")
        let handlerLog = directory + "/phone.jsonl"
        try Data(
            try await lab.handlerFile(
                handler, topic: "com.example.rouse", clients: Repository.root + "/clients", log: handlerLog
            ).utf8
        ).write(to: URL(fileURLWithPath: directory + "/handlers/phone.toml"))
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
            ], stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        @Sendable func status() async throws -> AgentStatus { try await AgentNetworkTests.status(socket: socket) }
        try await eventually("the channel open and the VoIP token known") {
            let current = try await status()
            return current.channel == "open" && current.tokens?["com.example.rouse.voip"] != nil
        }
        let token = try #require(try await status().tokens?["com.example.rouse.voip"])

        let kamailio = try await lab.startKamailio(
            environment: lab.pushEnvironment(
                rouse: try Products.path("rouse"), providerPort: gateway.providerPort,
                certs: Repository.root + "/certs", topic: "com.example.rouse"))
        defer { kamailio.kill() }
        try await lab.storeToken(token)

        // S0: the softphone is running and registered.
        let phone = try lab.startBaresip()
        do {
            try await SIPLab.until("baresip registered") { try await lab.registered() }
        } catch {
            let baresip = (try? String(contentsOfFile: lab.directory + "/baresip-s0.log", encoding: .utf8)) ?? ""
            let kamailio = (try? String(contentsOfFile: lab.kamailioLog, encoding: .utf8)) ?? ""
            Issue.record("baresip: \(baresip.suffix(1500))\nkamailio: \(kamailio.suffix(1500))")
            throw error
        }
        let awake = try await lab.calls("s0", count: Self.calls, period: .milliseconds(100))
        let baresipLog = { (try? String(contentsOfFile: lab.directory + "/baresip-s0.log", encoding: .utf8)) ?? "" }
        #expect(
            awake.answeredMilliseconds.count == Self.calls,
            "S0: \(awake.summary)\n\(awake.sippOutput)\nbaresip: \(baresipLog().suffix(3000))")
        #expect(awake.sippStatus == 0, "S0: \(awake.sippOutput)")
        phone.terminate()
        _ = try await phone.wait(timeout: .seconds(10))
        try await SIPLab.until("baresip's binding gone") { try await !lab.registered() }
        #expect(!FileManager.default.fileExists(atPath: handlerLog), "S0 must not wake the handler")

        // S1: nothing runs; each call is a push, a cold launch, a REGISTER.
        let woken = try await lab.calls("s1", count: Self.calls, period: .milliseconds(1500))
        #expect(woken.answeredMilliseconds.count == Self.calls, "S1: \(woken.summary)\n\(woken.sippOutput)")
        #expect(woken.sippStatus == 0, "S1: \(woken.sippOutput)")
        print("SIP (\(handler) handler) S0: \(awake.summary); S1: \(woken.summary)")

        // The last handler may still be quitting baresip as SIPp ends: wait until it is gone.
        try await eventually("the handler gone after its last call") {
            try await status().handlers.first { $0.name == "phone" }?.state == "notRunning"
        }
        let events = ((try? String(contentsOfFile: handlerLog, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        func count(_ event: String) -> Int { events.filter { $0["event"] as? String == event }.count }
        #expect(count("registered") == Self.calls, "one launch per call")
        #expect(count("reported") == Self.calls)
        // baresip's events before the handler's ctrl_tcp connection are not sent to it: REGISTER_OK and even
        // CALL_ESTABLISHED may come first; CALL_CLOSED (after the call's hold) is always seen.
        #expect(count("CALL_CLOSED") == Self.calls)
        #expect(count("callEnded") == Self.calls)
        #expect(count("gaveUp") == 0)
        let kamailioLog = (try? String(contentsOfFile: lab.kamailioLog, encoding: .utf8)) ?? ""
        #expect(kamailioLog.components(separatedBy: "rouse PUSH user=bob").count - 1 == Self.calls)
        #expect(kamailioLog.components(separatedBy: "rouse WOKEN user=bob").count - 1 == Self.calls)

        // No strike, every push acknowledged, nothing left running.
        let entry = try #require(try await status().handlers.first { $0.name == "phone" })
        #expect(entry.strikes == 0)
        #expect(entry.owedReports.isEmpty)
        try await eventually("every push acknowledged") { try AgentHarness.pending(gateway) == 0 }
        #expect(try await !lab.registered())
        kamailio.terminate()
        _ = try await kamailio.wait(timeout: .seconds(10))
        try await eventually("no kamailio, baresip or handler left") {
            Self.running(["kamailio", "baresip", "python3", "rouse-sip-handl"]).isEmpty
        }
    }

    /// RFC 8599 at the proxy, as linphone's REGISTER carries it: `pn-provider=apns;pn-prid=<token>:voip;
    /// pn-param=<team>.<bundle>.voip` Contact URI parameters store the token and the topic for the AOR and are
    /// answered with `Feature-Caps: *;+sip.pns="apns"`; another provider gets 555, a malformed token 400 (nothing
    /// stored). The REGISTERs come from a plain UDP client (python3), byte for byte what the RFC specifies.
    @Test func proxyLearnsTokenAndTopicFromRFC8599ContactParameters() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-sip-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lab = try SIPLab(directory: directory, files: Repository.root + "/deploy/sip")
        let kamailio = try await lab.startKamailio(environment: [:])
        defer { kamailio.kill() }
        let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            s.settimeout(5)
            port = s.getsockname()[1]
            for n, (user, params) in enumerate([
                    ("carol", "pn-provider=apns;pn-prid=\(token):voip;pn-param=ROUSETEAM1.com.example.phone.voip"),
                    ("dave", "pn-provider=fcm;pn-prid=abc;pn-param=x"),
                    ("erin", "pn-provider=apns;pn-prid=zz%3b;pn-param=x")]):
                s.sendto((f"REGISTER sip:127.0.0.1:\(lab.proxyPort) SIP/2.0\\r\\n"
                          f"Via: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bK-{n}\\r\\n"
                          f"From: <sip:{user}@127.0.0.1>;tag={n}\\r\\nTo: <sip:{user}@127.0.0.1>\\r\\n"
                          f"Call-ID: reg-{n}@127.0.0.1\\r\\nCSeq: 1 REGISTER\\r\\n"
                          f"Contact: <sip:{user}@127.0.0.1:{port};{params}>\\r\\nMax-Forwards: 70\\r\\n"
                          f"Expires: 60\\r\\nContent-Length: 0\\r\\n\\r\\n").encode(), ("127.0.0.1", \(lab.proxyPort)))
                reply = s.recv(4096).decode().split("\\r\\n")
                print(user, reply[0], [h for h in reply if h.startswith("Feature-Caps")])
            """
        let run = try await ChildProcess.run("/usr/bin/python3", ["-c", script], timeout: .seconds(30))
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(run.stdout)\(run.stderr)")
        #expect(
            lines.first?.hasPrefix(#"carol SIP/2.0 200 OK ['Feature-Caps: *;+sip.pns="apns"']"#) == true, "\(lines)")
        #expect(lines.dropFirst().first?.hasPrefix("dave SIP/2.0 555 ") == true, "\(lines)")
        #expect(lines.dropFirst(2).first?.hasPrefix("erin SIP/2.0 400 ") == true, "\(lines)")
        let tokens = try await lab.kamcmd(["htable.dump", "pn"])
        let topics = try await lab.kamcmd(["htable.dump", "pt"])
        #expect(tokens.contains("name: carol") && tokens.contains("value: \(token)"), "\(tokens)")
        #expect(topics.contains("value: com.example.phone"), "\(topics)")
        #expect(!tokens.contains("dave") && !tokens.contains("erin"), "\(tokens)")
        let bindings = try await lab.kamcmd(["ul.dump"])
        #expect(bindings.contains("AoR: carol"))
    }
}
