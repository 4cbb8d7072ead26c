import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseTestSupport
import Testing

@Suite(
    "rouse-agent background rules with real handler processes", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(2))
)
struct AgentBackgroundTests {
    static func numbers(_ harness: AgentHarness, _ name: String) -> [String] {
        harness.log(name).filter { $0.hasPrefix("push id=") }.compactMap { line in
            line.range(of: #"\{"n":\d+\}"#, options: .regularExpression).map { String(line[$0]) }
        }
    }

    @Test func throttledBackgroundPushesHoldOnlyTheNewest() async throws {
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler("fetch", mode: "complete", directory: $0, pushTypes: ["background"]) { rules in
                    rules.backgroundBurst = 1
                    // A token every 5 s: pushes 2 and 3 arrive well inside that window even on a loaded machine.
                    rules.backgroundPerHour = 720
                }
            ]
        }
        try await harness.push("fetch", type: "background", payload: #"{"n":1}"#)
        try await harness.waitForLine("fetch", "completed id=")
        try await harness.push("fetch", type: "background", payload: #"{"n":2}"#)
        try await harness.push("fetch", type: "background", payload: #"{"n":3}"#)
        try await harness.waitForLine("fetch", "completed id=", count: 2)
        try await eventually("all acknowledged (the replaced one too)") { try harness.pending() == 0 }
        #expect(Self.numbers(harness, "fetch") == [#"{"n":1}"#, #"{"n":3}"#])
    }

    @Test func userStoppedHandlerGetsTheHeldPushWhenStarted() async throws {
        let harness = try await AgentHarness {
            try [AgentHarness.handler("fetch", mode: "complete", directory: $0, pushTypes: ["background"])]
        }
        try await harness.admin(.userControl(.init(handler: "fetch", state: "stopped")))
        try await harness.push("fetch", type: "background", payload: #"{"n":1}"#)
        try await eventually("held") { await harness.handlerStatus("fetch")?.heldPush != nil }
        #expect(harness.log("fetch").isEmpty)
        try await harness.admin(.userControl(.init(handler: "fetch", state: "started")))
        try await harness.waitForLine("fetch", "completed id=")
        #expect(harness.log("fetch").first?.hasPrefix("registered launchReason=user") == true)
    }

    @Test func handlerRunsAsItsConfiguredUser() async throws {
        guard getuid() == 0 else { throw FixtureError("switching a handler's user needs root (uid \(getuid()))") }
        // `nobody` may not reach the build directory (a checkout in a 0700 home directory): it runs a copy.
        let executable = try Products.copyForEveryUser("rouse-example-handler")
        let harness = try await AgentHarness { directory in
            // The handler (nobody) writes its log here.
            chmod(directory, 0o777)
            var handler = try AgentHarness.handler("voip", mode: "report", directory: directory)
            handler.command[0] = executable
            handler.user = "nobody"
            handler.group = "nogroup"
            return [handler]
        }
        try await harness.push("voip", type: "voip")
        try await harness.waitForLine("voip", "reported id=")
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        #expect(harness.log("voip").first?.contains("uid=\(nobody) ") == true, "\(harness.log("voip"))")
        try await eventually("acknowledged") { try harness.pending() == 0 }
    }

    @Test(arguments: ["task", "leak"])
    func backgroundTaskExpiryNoticeAndLeak(_ mode: String) async throws {
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler("worker", mode: mode, directory: $0, pushTypes: ["background"]) { rules in
                    rules.taskBudget = .seconds(2)
                    rules.taskExpiryNotice = .seconds(1)
                    rules.taskGrace = .milliseconds(500)
                }
            ]
        }
        try await harness.admin(.userControl(.init(handler: "worker", state: "started")))
        try await harness.waitForLine("worker", "taskBegun id=1 name=upload")
        try await harness.waitForLine("worker", "taskExpiring id=1")
        if mode == "task" {
            try await harness.waitForLine("worker", "taskEnded id=1")
            try await eventually("suspended after ending its task") {
                await harness.handlerStatus("worker")?.state == "suspended"
            }
        } else {
            try await eventually("terminated for the leaked task") {
                await harness.handlerStatus("worker")?.state == "notRunning"
            }
        }
    }
}
