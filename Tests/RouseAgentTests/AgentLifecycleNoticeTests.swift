import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseClock
import RouseDBus
import RouseSystem
import RouseTestSupport
import Testing

/// Termination notices (issue 29) with real handler processes (`rouse-example-handler`): the agent in this process,
/// its handlers in their cgroups. The time changes are ``AgentClockStepTests``.
@Suite(
    "rouse-agent: willTerminate and timeChanged with real handlers", .serialized, .stopsWhatItStarts,
    .timeLimit(.minutes(3)))
struct AgentLifecycleNoticeTests {
    /// The VoIP example handler with a termination grace of `grace` seconds, suspended after `suspendAfter` idle.
    static func voip(
        _ directory: String, grace: Double, suspendAfter: Duration = .seconds(30), _ arguments: [String] = []
    ) throws -> HandlerConfiguration {
        try AgentHarness.handler(
            "voip", mode: "report", directory: directory, pushTypes: ["voip"], arguments: arguments
        ) {
            rules in
            rules.terminationGrace = .milliseconds(Int64(grace * 1000))
            rules.suspendAfter = suspendAfter
            rules.voipDeadline = .seconds(5)
        }
    }

    /// A directory outside the harness's (which its stop removes) for what the handler leaves behind.
    static func outside() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-term-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A push launches the handler and it reports the call (it runs, in the background).
    static func launched(_ harness: AgentHarness) async throws -> Int32 {
        try await harness.push("voip", type: "voip")
        try await harness.waitForLine("voip", "reported id=")
        return try #require(await harness.handlerStatus("voip")?.pid)
    }

    @Test func aHandlerThatExitsOnWillTerminateIsNotKilled() async throws {
        let marker = try Self.outside() + "/marker"
        defer {
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: marker).deletingLastPathComponent().path)
        }
        let harness = try await AgentHarness { try [Self.voip($0, grace: 10, ["--terminate-marker", marker])] }
        _ = try await Self.launched(harness)
        try await harness.admin(.userControl(.init(handler: "voip", state: "stopped")))
        try await harness.waitForLine("voip", "willTerminate reason=user stopped seconds=10.0")
        try await eventually("the handler exited") { await harness.agent.lastExitStatus("voip") != nil }
        // Its own clean exit (status 0), well inside the 10 s grace: no SIGKILL (it would be 128 + 9).
        #expect(await harness.agent.lastExitStatus("voip") == 0)
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "terminated user stopped\n")
        let counts = await harness.agent.terminationCounts
        #expect(counts.notices == 1)
        #expect(counts.exitedInGrace == 1)
        #expect(counts.killedAfterGrace == 0)
    }

    @Test func aHandlerThatIgnoresWillTerminateIsKilledAfterTheGrace() async throws {
        let harness = try await AgentHarness { try [Self.voip($0, grace: 3, ["--ignore-terminate"])] }
        let pid = try await Self.launched(harness)
        // Read before the stop is asked: the notice comes after it, the kill a whole grace after the notice, so the
        // kill is seen at least the grace after this (when the log line was seen is no bound: a loaded machine sees
        // it late).
        let asked = ContinuousClock.now
        try await harness.admin(.userControl(.init(handler: "voip", state: "stopped")))
        try await harness.waitForLine("voip", "willTerminate reason=user stopped seconds=3.0")
        // Told, not killed: it still runs during the grace (looked at only when the line was seen well inside it).
        if ContinuousClock.now - asked < .seconds(2) { #expect(Glibc.kill(pid, 0) == 0) }
        try await eventually("killed after the grace") { await harness.agent.lastExitStatus("voip") != nil }
        #expect(await harness.agent.lastExitStatus("voip") == 128 + SIGKILL)
        #expect(ContinuousClock.now - asked >= .seconds(3))
        let counts = await harness.agent.terminationCounts
        #expect(counts.notices == 1)
        #expect(counts.killedAfterGrace == 1)
        #expect(counts.exitedInGrace == 0)
    }

    @Test func aFrozenHandlerIsKilledWithoutNotice() async throws {
        let harness = try await AgentHarness { try [Self.voip($0, grace: 10, suspendAfter: .milliseconds(300))] }
        _ = try await Self.launched(harness)
        try await eventually("suspended") { await harness.handlerStatus("voip")?.state == "suspended" }
        try await harness.admin(.userControl(.init(handler: "voip", state: "stopped")))
        try await eventually("killed") { await harness.agent.lastExitStatus("voip") != nil }
        // Purged as iOS purges a suspended app: SIGKILL at once, no notice (it could not have run to read it).
        #expect(await harness.agent.lastExitStatus("voip") == 128 + SIGKILL)
        #expect(await harness.agent.terminationCounts.notices == 0)
        #expect(!harness.log("voip").contains { $0.hasPrefix("willTerminate") })
    }

    @Test func aReloadThatRemovesTheHandlerTellsIt() async throws {
        let marker = try Self.outside() + "/marker"
        defer {
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: marker).deletingLastPathComponent().path)
        }
        let harness = try await AgentHarness { try [Self.voip($0, grace: 10, ["--terminate-marker", marker])] }
        _ = try await Self.launched(harness)
        await harness.agent.reload(handlers: [])
        try await eventually("the removed handler exited") { await harness.agent.lastExitStatus("voip") != nil }
        #expect(await harness.agent.lastExitStatus("voip") == 0)
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "terminated handler removed\n")
        #expect(await harness.agent.terminationCounts.exitedInGrace == 1)
    }

    @Test func theAgentsStopTellsRunningHandlersAndWaitsForThem() async throws {
        let marker = try Self.outside() + "/marker"
        defer {
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: marker).deletingLastPathComponent().path)
        }
        let harness = try await AgentHarness { try [Self.voip($0, grace: 10, ["--terminate-marker", marker])] }
        _ = try await Self.launched(harness)
        await harness.stop()
        #expect(try String(contentsOfFile: marker, encoding: .utf8) == "terminated agent stopping\n")
        #expect(await harness.agent.lastExitStatus("voip") == 0)
        #expect(await harness.agent.terminationCounts.exitedInGrace == 1)
    }

    @Test func atASystemShutdownRunningHandlersGetNoNotice() async throws {
        let marker = try Self.outside() + "/marker"
        defer {
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: marker).deletingLastPathComponent().path)
        }
        // logind (python3-dbusmock's template) on a private bus, followed by the agent's session integration.
        let lab = try await DBusLab.start()
        let control = try await lab.connect()
        try await lab.startMock(template: "logind", busName: Logind.name, on: control)
        let harness = try await AgentHarness(
            handlers: { try [Self.voip($0, grace: 10, ["--terminate-marker", marker])] },
            configure: { _, configuration in
                configuration.session = SessionIntegration(systemBus: .address(lab.address), uid: Sys.uid)
            })
        try await eventually("logind followed") { await harness.agent.sessionPhase != nil }
        _ = try await Self.launched(harness)
        #expect(await !harness.agent.systemGoingDown)
        // `systemctl reboot` through logind: PrepareForShutdown(true) before systemd stops the units.
        _ = try await control.call(
            destination: Logind.name, path: Logind.managerPath, interface: "org.freedesktop.DBus.Mock",
            member: "EmitSignal",
            arguments: [
                .string("org.freedesktop.login1.Manager"), .string("PrepareForShutdown"), .string("b"),
                .array(element: "v", [.variant(.boolean(true))]),
            ])
        try await eventually("the shutdown seen") { await harness.agent.systemGoingDown }
        await harness.stop()
        try await eventually("killed") { await harness.agent.lastExitStatus("voip") != nil }
        #expect(await harness.agent.lastExitStatus("voip") == 128 + SIGKILL)
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(await harness.agent.terminationCounts.notices == 0)
    }

    @Test func theSystemAgentFollowsLogindsShutdownAndThenGivesNoNotice() async throws {
        // rouse-agent as systemd runs it (system mode, no session integration), logind from python3-dbusmock.
        let lab = try await DBusLab.start()
        let control = try await lab.connect()
        try await lab.startMock(template: "logind", busName: Logind.name, on: control)
        let rig = try await PreservationRig()
        defer { rig.tearDown() }
        let marker = rig.directory + "/marker"
        try rig.handler(["--terminate-marker", marker])
        let agent = try await rig.agent(1, extra: ["--system-bus-address", lab.address])
        defer { PreservationRig.kill(agent) }
        try await rig.waitForAgentLine(1, "following logind's PrepareForShutdown")
        try await rig.push(#"{"n":1}"#)
        try await rig.waitForHandler("reported id=")
        _ = try await control.call(
            destination: Logind.name, path: Logind.managerPath, interface: "org.freedesktop.DBus.Mock",
            member: "EmitSignal",
            arguments: [
                .string("org.freedesktop.login1.Manager"), .string("PrepareForShutdown"), .string("b"),
                .array(element: "v", [.variant(.boolean(true))]),
            ])
        try await rig.waitForAgentLine(1, "system shutdown: handlers will be stopped without a termination notice")
        // systemd stops the unit (SIGTERM): the handler is killed, not told.
        agent.process.terminate()
        try await rig.waitForAgentLine(1, "handler exited", ["handler": "voip", "status": "137"])
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(rig.handlerLines("willTerminate").isEmpty)
    }
}
