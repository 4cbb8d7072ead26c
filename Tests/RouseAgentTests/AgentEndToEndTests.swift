import Foundation
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseClock
import RouseTestSupport
import Testing

@Suite(
    "rouse-agent with a gateway and real handler processes", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentEndToEndTests {
    @Test func voipPushLaunchesHandlerWhichReportsThenPushIsAcked() async throws {
        let harness = try await AgentHarness { try [AgentHarness.handler("voip", mode: "report", directory: $0)] }
        try await harness.push("voip", type: "voip", payload: #"{"call":"alice"}"#)
        try await harness.waitForLine("voip", "registered launchReason=voipPush")
        try await harness.waitForLine("voip", "credentials topic=com.example.rouse.voip")
        try await harness.waitForLine("voip", "push id=")
        try await harness.waitForLine("voip", "reported id=")
        try await eventually("gateway saw the ack") { try harness.pending() == 0 }
        #expect(harness.log("voip").contains { $0.contains("mustReport=true") && $0.contains(#"{"call":"alice"}"#) })
        #expect(await harness.handlerStatus("voip")?.strikes == 0)
    }

    /// The `apns-id` is the provider's choice; the same id on another provider's topic is
    /// another push, not a duplicate. On the same topic it is one (handed once).
    @Test func theSameApnsIDOnAnotherTopicIsNotADuplicate() async throws {
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler("alpha", mode: "report", directory: $0, pushTypes: ["voip"]),
                AgentHarness.handler("beta", mode: "report", directory: $0, pushTypes: ["voip"]),
            ]
        }
        let id = "6d1a7c1e-0000-4000-8000-000000000015"
        try await harness.push("alpha", type: "voip", payload: #"{"n":1}"#, apnsID: id)
        try await harness.waitForLine("alpha", "reported id=")
        try await harness.push("beta", type: "voip", payload: #"{"n":2}"#, apnsID: id)
        try await harness.waitForLine("beta", "reported id=")
        try await harness.push("alpha", type: "voip", payload: #"{"n":3}"#, apnsID: id)
        try await eventually("all acknowledged") { try harness.pending() == 0 }
        #expect(harness.log("alpha").filter { $0.hasPrefix("push id=") }.count == 1)
    }

    @Test func missedReportsKillStrikeBlockAndReregistrationResumes() async throws {
        let harness = try await AgentHarness { try [AgentHarness.handler("voip", mode: "ignore", directory: $0)] }
        for round in 1...3 {
            try await harness.push("voip", type: "voip", payload: #"{"round":\#(round)}"#)
            try await harness.waitForLine("voip", "push id=", count: round)
            try await eventually("strike \(round) and handler killed") {
                let status = await harness.handlerStatus("voip")
                return status?.strikes == round && status?.state == "notRunning"
            }
            // Reported to the gateway: its admin view shows the strike.
            try await eventually("gateway admin view shows strikes=\(round)") {
                let reported = try await harness.gatewayHandler()
                return reported?["strikes"] as? Int == round && reported?["voipBlocked"] as? Bool == (round == 3)
            }
        }
        #expect(await harness.handlerStatus("voip")?.voipBlocked == true)
        try await eventually("acks of consumed pushes") { try harness.pending() == 0 }
        // Blocked: a fourth push launches nothing and is consumed.
        try await harness.push("voip", type: "voip", payload: #"{"round":4}"#)
        try await eventually("fourth push consumed") { try harness.pending() == 0 }
        #expect(harness.log("voip").filter { $0.hasPrefix("push id=") }.count == 3)
        // Registered again: VoIP launches resume.
        try await harness.admin(.reregister(.init(handler: "voip")))
        #expect(await harness.handlerStatus("voip")?.voipBlocked == false)
        try await eventually("gateway admin view shows the strikes cleared") {
            let reported = try await harness.gatewayHandler()
            return reported?["strikes"] as? Int == 0 && reported?["voipBlocked"] as? Bool == false
        }
        try await harness.push("voip", type: "voip", payload: #"{"round":5}"#)
        try await harness.waitForLine("voip", "push id=", count: 4)
    }

    @Test func foregroundHandlerOwesNoReport() async throws {
        let harness = try await AgentHarness(
            handlers: { try [AgentHarness.handler("voip", mode: "foreground", directory: $0)] },
            configure: { _, configuration in configuration.clock = AgentHarness.manualClock() })
        // The user starts it; it declares itself active (a handler launched for a push is in the background).
        try await harness.admin(.userControl(.init(handler: "voip", state: "started")))
        try await eventually("handler active") { await harness.handlerStatus("voip")?.state == "active" }
        try await harness.push("voip", type: "voip")
        try await harness.waitForLine("voip", "push id=")
        #expect(harness.log("voip").contains { $0.hasPrefix("push id=") && $0.contains("mustReport=false") })
        try await harness.waitAdvancingClock("acked on hand-over", by: .milliseconds(100)) {
            try harness.pending() == 0
        }
        try await harness.advance(by: .milliseconds(1500))  // past the 1 s deadline: still no strike
        #expect(await harness.handlerStatus("voip")?.strikes == 0)
    }

    @Test func pushDuringAnActiveCallOwesNoReport() async throws {
        let harness = try await AgentHarness { try [AgentHarness.handler("voip", mode: "keepcall", directory: $0)] }
        try await harness.push("voip", type: "voip", payload: #"{"n":1}"#)
        try await harness.waitForLine("voip", "reported id=")
        try await harness.push("voip", type: "voip", payload: #"{"n":2}"#)
        try await harness.waitForLine("voip", "push id=", count: 2)
        #expect(harness.log("voip").last { $0.hasPrefix("push id=") }?.contains("mustReport=false") == true)
        try await eventually("both acked") { try harness.pending() == 0 }
        #expect(await harness.handlerStatus("voip")?.strikes == 0)
    }

    @Test func pushForAHandlerThatCannotBeLaunchedIsConsumed() async throws {
        let harness = try await AgentHarness { directory in
            var handler = try AgentHarness.handler("voip", mode: "report", directory: directory)
            handler.command = [directory + "/no-such-handler"]
            return [handler]
        }
        try await harness.push("voip", type: "voip")
        try await eventually("acknowledged although no handler ran") { try harness.pending() == 0 }
        #expect(await harness.handlerStatus("voip")?.state == "notRunning")
    }

    @Test func stalePushOwesNoReport() async throws {
        let clock = AgentHarness.manualClock()
        let harness = try await AgentHarness(
            handlers: { try [AgentHarness.handler("voip", mode: "ignore", directory: $0) { $0.staleAfter = .zero }] },
            configure: { _, configuration in configuration.clock = clock })
        // The agent's wall clock stands still (a manual clock) while the gateway stamps the push with the machine's:
        // a minute on, the push is older than its stale limit (zero) when it arrives.
        clock.setWall(milliseconds: clock.wallMilliseconds + 60_000)
        try await harness.push("voip", type: "voip")
        try await harness.waitForLine("voip", "push id=")
        #expect(harness.log("voip").contains { $0.hasPrefix("push id=") && $0.contains("mustReport=false") })
        try await harness.waitAdvancingClock("acked on hand-over", by: .milliseconds(100)) {
            try harness.pending() == 0
        }
        try await harness.advance(by: .milliseconds(1500))  // past the 1 s deadline: still no strike, still running
        let status = await harness.handlerStatus("voip")
        #expect(status?.strikes == 0)
        #expect(status?.state != "notRunning")
    }

    @Test func backgroundPushCompletesOrOverrunsAndIsKilled() async throws {
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler("fetch", mode: "complete", directory: $0, pushTypes: ["background"]),
                AgentHarness.handler("slow", mode: "overrun", directory: $0, pushTypes: ["background"]),
            ]
        }
        try await harness.push("fetch", type: "background", payload: #"{"aps":{"content-available":1}}"#)
        try await harness.waitForLine("fetch", "completed id=")
        try await harness.push("slow", type: "background", payload: #"{"aps":{"content-available":1}}"#)
        try await harness.waitForLine("slow", "push id=")
        try await eventually("overrunning handler killed") {
            await harness.handlerStatus("slow")?.state == "notRunning"
        }
        try await eventually("both acked") { try harness.pending() == 0 }
        #expect(!harness.log("slow").contains { $0.hasPrefix("completed") })
    }

    @Test func idleHandlerIsSuspendedAndGetsOneCoalescedReachabilityNotice() async throws {
        let harness = try await AgentHarness { try [AgentHarness.handler("voip", mode: "report", directory: $0)] }
        try await harness.push("voip", type: "voip")
        try await harness.waitForLine("voip", "reported id=")
        try await eventually("suspended") { await harness.handlerStatus("voip")?.state == "suspended" }
        let status = await harness.agent.status()
        if status.suspendMechanism == "cgroup-v2", let note = status.suspendNote.split(separator: " ").last {
            // The kernel freezes the cgroup's tasks asynchronously after `cgroup.freeze` is written.
            let path = "\(note)/voip/cgroup.events"
            try await eventually("cgroup frozen (\(path))") {
                (try? String(contentsOfFile: path, encoding: .utf8))?.contains("frozen 1") == true
            }
        }
        let before = harness.log("voip").filter { $0.hasPrefix("reachability") }.count
        await harness.agent.reachabilityChanged(false)
        await harness.agent.reachabilityChanged(true)
        await harness.agent.reachabilityChanged(false)
        await harness.agent.reachabilityChanged(true)
        // Network back: the channel reconnects; a push resumes the handler.
        try await eventually("channel open again") { await harness.agent.status().channel == "open" }
        try await harness.push("voip", type: "voip", payload: #"{"n":2}"#)
        try await harness.waitForLine("voip", "reported id=", count: 2)
        // The coalesced notice and the push reach the resumed handler in either order: wait for the notice.
        try await eventually("the coalesced reachability notice") {
            harness.log("voip").filter { $0.hasPrefix("reachability") }.count > before
        }
        let notices = harness.log("voip").filter { $0.hasPrefix("reachability") }
        #expect(notices.count == before + 1, "\(notices)")
        #expect(notices.last?.hasPrefix("reachability reachable=true") == true)
    }

    @Test func impostorsAndMalformedFramesAreRefusedWithoutDisturbingHandlers() async throws {
        let harness = try await AgentHarness { try [AgentHarness.handler("voip", mode: "report", directory: $0)] }
        try await harness.push("voip", type: "voip")
        try await harness.waitForLine("voip", "reported id=")
        // This test process is not the handler's executable.
        let impostor = try AgentClient(socketPath: harness.socketPath)
        try impostor.register(handler: "voip")
        var answers: [AgentEvent] = []
        for await answer in impostor.messages { answers.append(answer) }
        guard case .error(let refusal) = answers.first else {
            Issue.record("impostor answered \(answers)")
            return
        }
        #expect(refusal.code == "notAuthorized")
        // Garbage: a clear error frame, then the connection is closed.
        let raw = try RawSocket(path: harness.socketPath)
        raw.write([0, 0, 0, 5] + Array("hello".utf8))
        let reply = raw.readAll()
        var decoder = FrameDecoder<AgentEvent>()
        decoder.append(reply)
        let error = try decoder.next()?.message
        guard case .error(let malformed) = error else {
            Issue.record("garbage answered \(String(describing: error))")
            return
        }
        #expect(malformed.code == "malformedFrame")
        // The real handler still works.
        try await harness.push("voip", type: "voip", payload: #"{"n":2}"#)
        try await harness.waitForLine("voip", "reported id=", count: 2)
    }
}
