import Foundation
import RouseAgent
import RouseGateway
import RouseHTTP2
import RouseSIPLab
import RouseTestSupport
import Testing

/// The RFC 8599 variant of the SIP end-to-end test (issue 26): the softphone is liblinphone (linphone-daemon from
/// Debian's linphone-cli 5.1, headless, auto-answer), whose REGISTER carries the VoIP push token as RFC 8599 Contact
/// URI parameters; Kamailio (the committed `deploy/sip/kamailio-rouse-push.cfg`) learns the token and the topic from
/// that REGISTER alone, with no `kamcmd` upload, and later pushes with them. The handler is Python
/// (`deploy/sip/rouse-linphone-handler.py` on `clients/python/rouse_handler.py`); it builds the Contact parameters
/// from the `credentials` the agent gives it.
///
/// S0: linphone awake and registered (the handler's `--awake` mode with the token the agent reports): INVITE → 200
/// OK; its REGISTER stores the token. S1: nothing runs: Kamailio suspends the INVITE and runs `rouse send voip` to
/// the learnt token; the agent launches the handler, which reports the call, starts linphone; its REGISTER (again
/// with the push parameters) resumes the INVITE, linphone answers; after the call the handler quits linphone (it
/// un-REGISTERs), ends the call and exits.
@Suite(
    "SIP end to end, RFC 8599: Kamailio learns the push token from liblinphone's REGISTER, SIPp calls it asleep",
    .serialized, .stopsWhatItStarts, .timeLimit(.minutes(4)))
struct SIPLinphoneTests {
    static let calls = 20

    @Test func linphoneRegistersItsPushTokenAndIsWokenByAPushForEveryCall() async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let lab = try SIPLab(directory: directory + "/sip", files: Repository.root + "/deploy/sip")
        let phone = try lab.linphonePhone()
        let clients = Repository.root + "/clients"
        let handlerLog = directory + "/phone.jsonl"
        try Data(phone.handlerFile(topic: "com.example.rouse", clients: clients, log: handlerLog).utf8)
            .write(to: URL(fileURLWithPath: directory + "/handlers/phone.toml"))
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
        #expect(try await lab.stored("pn", phone.user) == nil)

        // S0: linphone awake; its REGISTER alone teaches Kamailio the token and the topic (RFC 8599).
        let awakeLog = directory + "/awake.jsonl"
        let awakePhone = try phone.startAwake(
            token: token, topic: "com.example.rouse.voip", clients: clients, log: awakeLog)
        try await SIPLab.until("linphone registered", timeout: .seconds(20)) { try await lab.registered(phone.user) }
        #expect(try await lab.stored("pn", phone.user) == token)
        #expect(try await lab.stored("pt", phone.user) == "com.example.rouse")
        let awake = try await lab.calls("l0", count: Self.calls, period: .milliseconds(100), callee: phone.user)
        #expect(awake.answeredMilliseconds.count == Self.calls, "S0: \(awake.summary)\n\(awake.sippOutput)")
        #expect(awake.sippStatus == 0, "S0: \(awake.sippOutput)")
        awakePhone.terminate()
        _ = try await awakePhone.wait(timeout: .seconds(10))
        try await SIPLab.until("linphone's binding gone (un-REGISTER)") { try await !lab.registered(phone.user) }
        #expect(!FileManager.default.fileExists(atPath: handlerLog), "S0 must not wake the handler")

        // S1: nothing runs; each call is a push to the learnt token, a cold launch, linphone's REGISTER.
        let woken = try await lab.calls("l1", count: Self.calls, period: .milliseconds(1500), callee: phone.user)
        #expect(woken.answeredMilliseconds.count == Self.calls, "S1: \(woken.summary)\n\(woken.sippOutput)")
        #expect(woken.sippStatus == 0, "S1: \(woken.sippOutput)")
        print("SIP (linphone, RFC 8599) S0: \(awake.summary); S1: \(woken.summary)")

        try await eventually("the handler gone after its last call") {
            try await status().handlers.first { $0.name == "phone" }?.state == "notRunning"
        }
        let events = ((try? String(contentsOfFile: handlerLog, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        func count(_ event: String) -> Int { events.filter { $0["event"] as? String == event }.count }
        let kamailioLog = (try? String(contentsOfFile: lab.kamailioLog, encoding: .utf8)) ?? ""
        let pushes = kamailioLog.components(separatedBy: "rouse PUSH user=carol").count - 1
        // A call placed right after the previous one's BYE can reach linphone before its un-REGISTER: answered by
        // the phone still running (no push), as a proxy must. The others are push-woken, each with its REGISTER.
        #expect(pushes + count("nextCallOnPhone") == Self.calls)
        #expect(pushes >= Self.calls / 2, "most calls push-woken: \(pushes)")
        #expect(kamailioLog.components(separatedBy: "rouse WOKEN user=carol").count - 1 == pushes)
        // One launch per push, or a push taken by the handler still quitting linphone after the previous call
        // (delivered to it, not owed a report: a call was active).
        #expect(count("registered") + count("nextCall") == pushes, "one launch per push")
        #expect(count("reported") == pushes)
        #expect(
            events.filter { $0["event"] as? String == "linphone" && $0["pushParameters"] as? Bool == true }.count
                == count("linphone") && count("linphone") >= Self.calls / 2,
            "every woken linphone REGISTERs with the RFC 8599 parameters")
        #expect(count("LinphoneCallStreamsRunning") == Self.calls)
        #expect(count("LinphoneCallReleased") == Self.calls)
        #expect(count("linphoneQuit") == count("linphone"), "every linphone started was told to quit")
        #expect(count("callEnded") == pushes)
        #expect(count("gaveUp") == 0)

        // No strike, every push acknowledged, nothing left running.
        let entry = try #require(try await status().handlers.first { $0.name == "phone" })
        #expect(entry.strikes == 0)
        #expect(entry.owedReports.isEmpty)
        try await eventually("every push acknowledged") { try AgentHarness.pending(gateway) == 0 }
        #expect(try await !lab.registered(phone.user))
        kamailio.terminate()
        _ = try await kamailio.wait(timeout: .seconds(10))
        try await eventually("no kamailio, linphone-daemon or handler left") {
            SIPEndToEndTests.running(["kamailio", "linphone-daemon", "python3"]).isEmpty
        }
    }
}
