import Foundation
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseTestSupport
import RouseWire
import Testing

/// A report written before its deadline is not lost to the deadline: the report reaches the agent through its reader
/// thread and the deadline through its timer, and the two can reach the agent's actor in either order (on a loaded
/// machine the timer first: a full run once terminated a handler that had reported in time). The rules wait for the
/// handler's input before they enforce a due deadline (`InputBeforeDeadline`).
@Suite(.stopsWhatItStarts, .serialized, .timeLimit(.minutes(2)))
struct AgentReportBeforeDeadlineTests {
    @Test func aReportWrittenJustBeforeTheDeadlineIsHandledBeforeTheDeadlineIs() async throws {
        let harness = try await AgentHarness(
            handlers: { _ in
                var rules = HandlerRules()
                rules.voipDeadline = .seconds(1)
                return [
                    // The test process registers as the handler itself: its executable is the handler's. It never
                    // launches it (it is registered before any push).
                    HandlerConfiguration(
                        name: "voip", topic: AgentHarness.bundleID,
                        command: [try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")],
                        pushTypes: ["voip"], allowRoot: true, rules: rules)
                ]
            },
            configure: { _, configuration in configuration.clock = AgentHarness.manualClock() })
        let client = try AgentClient(socketPath: harness.socketPath)
        defer { client.close() }
        try client.register(handler: "voip")
        var events = client.messages.makeAsyncIterator()
        try await eventually("registered") { await harness.handlerStatus("voip")?.state == "background" }

        // Each round: the report is written, then at once the clock jumps past its deadline. Whichever reaches the
        // agent first, the report counts.
        for round in 1...8 {
            try await harness.push("voip", type: "voip", payload: #"{"round":\#(round)}"#)
            var pushID: String?
            while let event = await events.next() {
                if case .push(let push) = event {
                    #expect(push.mustReport == true)
                    pushID = push.pushID
                    break
                }
                if case .willTerminate(let notice) = event { Issue.record("willTerminate \(notice)") }
            }
            let id = try #require(pushID)
            try client.reportCall(pushID: id, callID: "call-\(round)")
            try await harness.advance(by: .seconds(2))
            try await eventually("the report of round \(round) handled") {
                await harness.handlerStatus("voip")?.owedReports.isEmpty == true
            }
            try await harness.advance(by: .seconds(1))  // a held look comes back and finds nothing due
            let status = try #require(await harness.handlerStatus("voip"))
            #expect(status.strikes == 0, "round \(round): \(harness.agentLog.tail())")
            #expect(status.state != "notRunning", "round \(round)")
            // The call ends before the next push (a push during a call owes no report): frames are handled in order,
            // so the answer to a request sent after it means the end was handled.
            try client.callEnded(callID: "call-\(round)")
            _ = try await client.request(.listNotifications(.init()))
        }
        try await harness.waitAdvancingClock("every push acknowledged", by: .milliseconds(100)) {
            try harness.pending() == 0
        }
    }
}
