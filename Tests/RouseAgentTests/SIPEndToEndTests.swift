import Foundation
import RouseAgent
import RouseGateway
import RouseHTTP2
import RouseSIPLab
import RouseTestSupport
import Testing

/// A SIP call reaches a softphone, with real SIP software from Debian on loopback (`RouseSIPLab`): Kamailio running
/// the committed `deploy/sip/kamailio-rouse-push.cfg`, baresip as the softphone, SIPp as the caller; the gateway
/// (in this process), the built `rouse-agent` and `rouse` (the push sender Kamailio runs), and the Python handler
/// `deploy/sip/rouse-sip-handler.py` on `clients/python/rouse_handler.py`.
///
/// S0: baresip registered and awake: INVITE → 200 OK. S1: no softphone running: Kamailio suspends the INVITE and
/// runs `rouse send voip`; the agent launches the handler, which reports the call at once and starts baresip; its
/// REGISTER resumes the INVITE, baresip answers; after the call the handler quits baresip, ends the call and exits.
@Suite(
    "SIP end to end: Kamailio, baresip, SIPp and a push-woken Python handler", .serialized, .stopsWhatItStarts,
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

    @Test func awakePhoneAnswersAndSleepingPhoneIsWokenByAPushForEveryCall() async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let lab = try SIPLab(directory: directory + "/sip", files: Repository.root + "/deploy/sip")
        let handlerLog = directory + "/phone.jsonl"
        try Data(
            lab.handlerFile(
                topic: "com.example.rouse", pythonPath: Repository.root + "/clients/python", log: handlerLog
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
        try await SIPLab.until("baresip registered") { try await lab.registered() }
        let awake = try await lab.calls("s0", count: Self.calls, period: .milliseconds(100))
        #expect(awake.answeredMilliseconds.count == Self.calls, "S0: \(awake.summary)\n\(awake.sippOutput)")
        #expect(awake.sippStatus == 0, "S0: \(awake.sippOutput)")
        phone.terminate()
        _ = try await phone.wait(timeout: .seconds(10))
        try await SIPLab.until("baresip's binding gone") { try await !lab.registered() }
        #expect(!FileManager.default.fileExists(atPath: handlerLog), "S0 must not wake the handler")

        // S1: nothing runs; each call is a push, a cold launch, a REGISTER.
        let woken = try await lab.calls("s1", count: Self.calls, period: .milliseconds(1500))
        #expect(woken.answeredMilliseconds.count == Self.calls, "S1: \(woken.summary)\n\(woken.sippOutput)")
        #expect(woken.sippStatus == 0, "S1: \(woken.sippOutput)")
        print("SIP S0: \(awake.summary); S1: \(woken.summary)")

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
        try await eventually("no kamailio, baresip or python handler left") {
            Self.running(["kamailio", "baresip", "python3"]).isEmpty
        }
    }
}
