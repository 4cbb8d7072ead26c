import Foundation
import RouseAgent
import RouseAgentCore
import RouseSIPLab
import RouseTestSupport
import RouseWire
import Testing

/// S2 of the SIP scenarios: the socket-woken phone, with real Kamailio (the committed
/// `deploy/sip/kamailio-rouse-push.cfg`, listening on UDP and TCP), baresip and SIPp, the agent in this process on a
/// manual clock, and the handler in Python (`deploy/sip/rouse-sip-bridge.py` on `clients/python/rouse_handler.py`):
/// the handler owns the phone's TCP connection to Kamailio, hands it to the agent (`addVoIPSocket`), asks for a
/// 600 s keep-alive, and relays SIP between that connection and baresip (whose outbound proxy it is). The handler
/// and baresip are frozen between events: an hour of idle is six keep-alives (each a re-REGISTER on the watched
/// connection, answered 200, the binding's CSeq moving with them), then each of 20 calls is an INVITE on the
/// frozen phone's socket that wakes it, reported with the wake's id, answered by baresip.
@Suite(
    "SIP end to end, S2: a frozen softphone registered over TCP, woken by the INVITE on its watched socket",
    .serialized, .stopsWhatItStarts, .timeLimit(.minutes(5)))
struct SIPSocketWokenTests {
    static let calls = 20

    static func events(_ log: String) -> [[String: Any]] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func frozenPhoneStaysRegisteredThroughKeepAlivesAndIsWokenByEachInvite() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-sip-s2-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lab = try SIPLab(directory: directory, files: Repository.root + "/deploy/sip")
        let kamailio = try await lab.startKamailio(environment: [:])
        defer { kamailio.kill() }
        let log = directory + "/phone.jsonl"
        let harness = try await AgentHarness(
            handlers: { _ in
                var rules = HandlerRules()
                rules.suspendAfter = .seconds(1)
                return [
                    HandlerConfiguration(
                        name: "phone", topic: "com.example.rouse", command: lab.bridgeCommand(log: log),
                        pushTypes: ["voip"], allowRoot: true,
                        environment: ["PYTHONPATH=\(Repository.root)/clients/python"], rules: rules)
                ]
            }, configure: { _, configuration in configuration.clock = AgentHarness.manualClock() })
        @Sendable func count(_ event: String, _ match: ([String: Any]) -> Bool = { _ in true }) -> Int {
            Self.events(log).filter { $0["event"] as? String == event && match($0) }.count
        }
        @Sendable func frozen() async throws {
            try await harness.waitAdvancingClock(
                "the phone frozen; log: \(Self.events(log).suffix(5))", by: .milliseconds(100)
            ) {
                await harness.handlerStatus("phone")?.state == "suspended"
            }
        }

        try await harness.admin(.userControl(.init(handler: "phone", state: "started")))
        do {
            try await SIPLab.until("baresip registered over TCP through the handler", timeout: .seconds(30)) {
                try await lab.registered()
            }
        } catch {
            Issue.record("phone log: \(Self.events(log).suffix(10)); \(await harness.diagnosis("phone"))")
            throw error
        }
        let firstCSeq = try #require(try await lab.bindingCSeq())
        #expect(count("voipSocketAdded") == 1)
        try await frozen()

        // An hour of idle: six keep-alives, each a re-REGISTER on the watched connection.
        for round in 1...6 {
            try await harness.advance(by: .seconds(600))
            try await eventually("keep-alive \(round): re-REGISTERed; log: \(Self.events(log).suffix(5))") {
                count("reRegistered") >= round
            }
            try await frozen()
        }
        let refreshes = count("reRegistered")
        #expect(refreshes >= 6)
        #expect(count("reRegistered") { ($0["status"] as? Int) == 200 } == refreshes)
        #expect(count("keepAlive") == refreshes)
        #expect(try await lab.bindingCSeq() == firstCSeq + refreshes, "the binding refreshed by each keep-alive")

        // 20 calls, each to the frozen phone: the INVITE on its socket wakes it.
        let wakesBefore = await harness.agent.voipSocketCounters.wakes
        var answered: [Double] = []
        var failures: [String] = []
        for call in 1...Self.calls {
            try await frozen()
            let run = try await lab.calls("s2-\(call)", count: 1, period: .milliseconds(100))
            answered += run.answeredMilliseconds
            if run.sippStatus != 0 { failures.append(run.sippOutput) }
            try await eventually("call \(call) ended at the handler") { count("callEnded") >= call }
        }
        let s2 = SIPCallRun(
            tag: "s2", attempted: Self.calls, answeredMilliseconds: answered, sippStatus: 0, sippOutput: "")
        print("SIP S2 (Python handler, socket-woken): \(s2.summary); keep-alive re-REGISTERs \(refreshes)")
        #expect(answered.count == Self.calls, "S2: \(s2.summary)\n\(failures.joined(separator: "\n"))")
        #expect(await harness.agent.voipSocketCounters.wakes - wakesBefore == Self.calls, "one wake per call")
        // Each call reported once; each came with its wake (the report names it, or came first and answered it).
        #expect(count("reported") == Self.calls)
        #expect(count("wake") == Self.calls)
        #expect(count("callEnded") == Self.calls)
        #expect(count("registered") == 1, "one process all along (thawed, not relaunched)")
        #expect(count("failed") == 0 && count("dropped") == 0, "\(Self.events(log).suffix(10))")
        let entry = try #require(await harness.handlerStatus("phone"))
        #expect(entry.strikes == 0)
        #expect(entry.owedReports.isEmpty)
        #expect(try await lab.registered())

        await harness.stop()
        kamailio.terminate()
        _ = try await kamailio.wait(timeout: .seconds(10))
        try await eventually("no kamailio, baresip or handler left") {
            SIPEndToEndTests.running(["kamailio", "baresip", "python3"]).isEmpty
        }
    }
}
