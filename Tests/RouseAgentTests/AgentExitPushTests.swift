import Foundation
import RouseAgent
import RouseAgentCore
import RouseTestSupport
import Testing

/// A VoIP push unanswered when its handler exits (HandlerMachine+Exit, docs/handler-protocol.md "A push unanswered at
/// exit"), with real handler processes: a clean exit (status 0, by its own choice) gets the same push to a new launch,
/// acknowledged when that launch reports it; a crash, or an exit the agent asked for, consumes it with no new launch.
@Suite("rouse-agent: a push unanswered at exit", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentExitPushTests {
    static func pushLines(_ harness: AgentHarness) -> [String] {
        harness.log("voip").filter { $0.hasPrefix("push id=") }
    }

    /// The push id in a `push id=ID …` or `exiting unanswered id=ID …` line.
    static func pushID(_ line: String) -> String? {
        line.split(separator: " ").first { $0.hasPrefix("id=") }.map { String($0.dropFirst(3)) }
    }

    @Test func aHandlerThatExitsCleanlyWithAPushUnansweredGetsItAgainAtANewLaunch() async throws {
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler(
                    "voip", mode: "report", directory: $0, pushTypes: ["voip"],
                    arguments: ["--exit-unanswered-once", $0 + "/exited"])
            ]
        }
        try await harness.push("voip", type: "voip", payload: #"{"call":"alice"}"#)
        try await harness.waitForLine("voip", "exiting unanswered id=")
        // The new launch: the same push, reported, then acknowledged to the gateway.
        try await harness.waitForLine("voip", "registered launchReason=voipPush", count: 2)
        try await harness.waitForLine("voip", "reported id=")
        try await eventually("gateway saw the ack") { try harness.pending() == 0 }
        let exited = try #require(harness.log("voip").first { $0.hasPrefix("exiting unanswered id=") })
        let handed = Self.pushLines(harness)
        #expect(handed.count == 2)
        #expect(Set(handed.compactMap(Self.pushID)) == [try #require(Self.pushID(exited))])
        #expect(handed.allSatisfy { $0.contains("mustReport=true") })
        #expect(await harness.handlerStatus("voip")?.strikes == 0)
    }

    @Test func aHandlerThatCrashesWithAPushUnansweredIsNotLaunchedAgainForIt() async throws {
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler(
                    "voip", mode: "report", directory: $0, pushTypes: ["voip"],
                    arguments: ["--exit-unanswered-once", $0 + "/exited", "--exit-status", "3"])
            ]
        }
        try await harness.push("voip", type: "voip")
        try await harness.waitForLine("voip", "exiting unanswered id=")
        // Consumed at the exit: acknowledged, and the handler left not running (a new launch would be `launching`
        // from the same step that handled the exit).
        try await eventually("push consumed, handler not running") {
            let status = await harness.handlerStatus("voip")
            return try harness.pending() == 0 && status?.state == "notRunning"
        }
        #expect(await harness.agent.lastExitStatus("voip") == 3)
        #expect(harness.log("voip").filter { $0.hasPrefix("registered ") }.count == 1)
        #expect(Self.pushLines(harness).count == 1)
    }

    @Test func aHandlerTheAgentStopsIsNotLaunchedAgainThoughItExitsWithStatusZero() async throws {
        // It ignores VoIP pushes with "skip" (owed for 30 s) and never completes background pushes (1 s): the agent
        // stops it for the background push with the VoIP push still owed; it exits 0 on willTerminate.
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler(
                    "voip", mode: "overrun", directory: $0, arguments: ["--ignore-payload", "skip"],
                    configure: { $0.voipDeadline = .seconds(30) })
            ]
        }
        try await harness.push("voip", type: "voip", payload: #"{"skip":1}"#)
        try await harness.waitForLine("voip", "push id=")
        try await harness.push("voip", type: "background")
        try await harness.waitForLine("voip", "exiting on willTerminate")
        try await eventually("pushes consumed, handler not running") {
            let status = await harness.handlerStatus("voip")
            return try harness.pending() == 0 && status?.state == "notRunning"
        }
        #expect(await harness.agent.lastExitStatus("voip") == 0)
        #expect(harness.log("voip").filter { $0.hasPrefix("registered ") }.count == 1)
    }
}
