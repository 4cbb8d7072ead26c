import Foundation
import RouseAgent
import RouseTestSupport
import Testing

/// The call's activation drives a real audio server: `rouse-agent --user` with `deploy/hooks/pactl-roles.sh` as its
/// activation hook, a headless PulseAudio (`PulseAudioServer`) named by the session's `PULSE_SERVER`, a music
/// stream playing into it (`pacat`, `media.role=music`). What is checked is the server's own state
/// (`pactl list sink-inputs`), not what the hook says it did.
@Suite("Activations on a real PulseAudio server", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentAudioServerTests {
    static let hook = Repository.root + "/deploy/hooks/pactl-roles.sh"

    /// The music stream as the server reports it.
    static func music(_ pulse: PulseAudioServer) async -> PulseAudioServer.SinkInput? {
        try? await pulse.sinkInputs().first { $0.role == "music" }
    }

    @Test("a call mutes the music stream while it holds its session, a ducking session lowers it, both restore it")
    func callAndDuckingOnTheServer() async throws {
        let pulse = try await PulseAudioServer.start()
        let stream = try pulse.play(role: "music")
        defer { stream.kill() }  // (a RunningChild released early would kill its stream at once)
        do {
            try await eventually("the music stream plays") { await Self.music(pulse)?.muted == false }
        } catch {
            Issue.record("\(error)\n\(pulse.diagnostics())")
            throw error
        }
        #expect(await Self.music(pulse)?.volumePercent == 100)

        let harness = try await AgentHarness(
            handlers: { try AgentHarness.audioHandlers($0, ["phone": "keepcall", "nav": "report"]) },
            configure: { _, configuration in
                // The per-user mode: the hook is given the session's audio server, as the handlers are.
                configuration.mode = .user
                configuration.sessionEnvironment = ["PULSE_SERVER": pulse.address]
                configuration.activationHook = [Self.hook]
            })

        // A VoIP push; the phone reports the call: its activation mutes the music, on the server.
        try await harness.push("phone", type: "voip", payload: #"{"call":"alice"}"#)
        try await harness.waitForLine("phone", "reported id=")
        try await harness.waitForEvent("phone", "session=call event=callActivated")
        try await eventually("music muted during the call") { await Self.music(pulse)?.muted == true }

        // The call ends: the music plays again at full volume.
        let reported = harness.lines("phone", "reported id=")[0]
        let callID = try #require(reported.split(separator: " ").first { $0.hasPrefix("call=") }?.dropFirst(5))
        try harness.command("phone", "endcall \(callID)")
        try await harness.waitForEvent("phone", "session=call event=callDeactivated")
        try await eventually("music back after the call") {
            let music = await Self.music(pulse)
            return music?.muted == false && music?.volumePercent == 100
        }

        // A navigation prompt that ducks others: the music goes down to 30 %, and back when it ends.
        try await harness.startHandler("nav")
        #expect(
            try await harness.activate("nav", "guidance playback options=duckOthers role=navigation")
                == "event=granted")
        try await eventually("music ducked") { await Self.music(pulse)?.volumePercent == 30 }
        #expect(await Self.music(pulse)?.muted == false)
        try harness.command("nav", "deactivate guidance notify")
        try await harness.waitForLine("nav", "deactivated session=guidance")
        try await eventually("music restored") { await Self.music(pulse)?.volumePercent == 100 }
    }
}
