import Foundation
import RouseAgent
import RouseTestSupport
import Testing

/// Strikes for UnifiedPush apps (docs/unifiedpush.md, "Strikes"), with real parts (``UnifiedPushLab``): a connector
/// whose `Message` answers a D-Bus error, and one that never answers (the distributor's reply timeout), each strike
/// out at the handler rules' limit (3): the next message is not handed to the app but left unacknowledged at the
/// gateway; when the app registers again the pause ends and every message the gateway kept reaches it, acknowledged.
@Suite(.serialized, .stopsWhatItStarts, .timeLimit(.minutes(5)))
struct AgentUnifiedPushStrikeTests {
    static let app = "org.example.PushStrikes"

    @Test func anAppAnsweringErrorsIsPausedAfterThreeStrikesAndResumesWhenItRegistersAgain() async throws {
        try await strikeOut(mode: "error")
    }

    @Test func anAppThatNeverAnswersIsPausedAfterThreeTimeoutsAndResumesWhenItRegistersAgain() async throws {
        try await strikeOut(mode: "hang")
    }

    private func strikeOut(mode: String) async throws {
        // The app stays up (its idle exit is a minute): its D-Bus activation, slow on a loaded machine, happens once
        // and within the reply timeout (10 s), so "error" fails by its error reply and "hang" by the timeout. No
        // probe within the test.
        let lab = try await UnifiedPushLab.start(limits: {
            $0.replyTimeout = .seconds(10)
            $0.probeInterval = .seconds(3600)
        })
        try lab.install(Self.app, version: 2, idleSeconds: 60)
        #expect(
            try await lab.register(Self.app, version: 2, token: "tok", [])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        let endpoint = try await lab.endpoint(Self.app, token: "tok")
        try mode.write(toFile: lab.directory + "/\(Self.app).mode", atomically: true, encoding: .utf8)
        func messages() -> Int { lab.events(Self.app).filter { $0["call"] as? String == "Message" }.count }

        for count in 1...3 {
            #expect(try await lab.send(endpoint, size: 12, seed: 50 + count, ["--no-vapid"])["status"] as? Int == 201)
            _ = try await lab.waitForMessage(Self.app, count: count)
            try await eventually("failure \(count) counted") { await lab.agent.status().unifiedPush?.failed == count }
        }
        let struck = try #require(await lab.agent.status().unifiedPush)
        #expect(struck.strikes == 3)
        #expect(struck.pauses == 1)
        #expect(struck.paused == [Self.app])
        #expect(struck.acknowledged == 0)

        // Paused: the fourth message reaches the agent but not the app; the gateway keeps all four.
        #expect(try await lab.send(endpoint, size: 12, seed: 54, ["--no-vapid"])["status"] as? Int == 201)
        try await eventually("the fourth message withheld") { await lab.agent.status().unifiedPush?.withheld == 1 }
        // The agent counts a delivery in the step that decides it: a fourth one would show with the withheld count.
        #expect(await lab.agent.status().unifiedPush?.delivered == 3, "a paused app was delivered to")
        #expect(messages() == 3, "a paused app was delivered to")
        #expect(try lab.pending() == 4, "a failed or withheld message was acknowledged")

        // The app works again and registers (as every app start does): resumed; the next channel brings the four.
        try FileManager.default.removeItem(atPath: lab.directory + "/\(Self.app).mode")
        #expect(
            try await lab.register(Self.app, version: 2, token: "tok", [])["success"] as? String
                == "REGISTRATION_SUCCEEDED")
        try await eventually("resumed") { await lab.agent.status().unifiedPush?.paused == [] }
        await lab.agent.reachabilityChanged(false)
        try await eventually("channel closed") { await lab.agent.status().channel != "open" }
        await lab.agent.reachabilityChanged(true)
        try await eventually("all four acknowledged", timeout: .seconds(30)) { try lab.pending() == 0 }
        #expect(messages() >= 7)
        #expect(await lab.agent.status().unifiedPush?.acknowledged == 4)
    }
}
