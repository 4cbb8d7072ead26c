import Foundation
import RouseAgent
import RouseAgentCore
import RouseDBus
import RouseSystem
import RouseTestSupport
import Testing

/// Per-user mode: no handler is launched before the session's first unlock; pushes (VoIP too) wait unacknowledged
/// and are delivered, in order, once logind says the session is unlocked.
@Suite(.serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentFirstUnlockTests {
    @Test func aVoIPPushWaitsForTheFirstUnlockThenLaunchesTheHandler() async throws {
        let lab = try await DBusLab.start()
        let control = try await lab.connect()
        try await lab.startMock(template: "logind", busName: Logind.name, on: control)
        let added = try await control.call(
            destination: Logind.name, path: Logind.managerPath, interface: "org.freedesktop.DBus.Mock",
            member: "AddSession",
            arguments: [.string("c1"), .string("seat0"), .uint32(Sys.uid), .string("me"), .boolean(true)])
        let sessionPath = try #require(added.first?.string)
        func setLocked(_ locked: Bool) async throws {
            _ = try await control.call(
                destination: Logind.name, path: sessionPath, interface: "org.freedesktop.login1.Session",
                member: "SetLockedHint", arguments: [.boolean(locked)])
        }
        try await setLocked(true)  // booted, nobody unlocked yet
        let address = lab.address
        let harness = try await AgentHarness(
            handlers: { try [AgentHarness.handler("voip", mode: "report", directory: $0)] },
            configure: { _, configuration in
                configuration.session = SessionIntegration(systemBus: .address(address), uid: Sys.uid)
            })
        try await eventually("the session's lock read") { await harness.agent.sessionPhase == .locked }
        try await harness.push("voip", type: "voip", payload: #"{"call":"alice"}"#)
        try await eventually("the push held") { await harness.agent.heldPushCount == 1 }
        #expect(harness.log("voip").isEmpty, "a handler was launched before the first unlock")
        #expect(try harness.pending() == 1, "a held push must stay unacknowledged at the gateway")
        #expect(await harness.agent.status().session?.heldPushes == 1)

        try await setLocked(false)
        try await harness.waitForLine("voip", "registered launchReason=voipPush")
        try await harness.waitForLine("voip", "reported id=")
        try await eventually("gateway saw the ack") { try harness.pending() == 0 }
        #expect(await harness.agent.heldPushCount == 0)
    }
}
