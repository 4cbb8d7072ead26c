import Foundation
import RouseActivation
import RouseAgent
import RouseAgentCore
import RouseTestSupport
import Testing

/// Audible background audio on a real PulseAudio server (`PulseAudioServer`, as `AgentAudioServerTests`): three
/// handlers hold a playback session in the background; `sh` starts each one's stream before the handler (`pacat`
/// in its cgroup): a 440 Hz tone, zeros, or nothing. The agent (per-user mode, the session's `PULSE_SERVER`) checks
/// their sink-inputs when their background time would end and then every grace period (1 s here): the silent and
/// the mute one lose the session's protection and are frozen; the one playing a tone stays unfrozen.
@Suite("Audible background audio on a real PulseAudio server", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentAudibleAudioTests {
    /// 60 s of a 440 Hz sine at 8 kHz, mono, s16le, at about -8 dBFS.
    static func tone() -> Data {
        var data = Data(capacity: 8000 * 60 * 2)
        for index in 0..<(8000 * 60) {
            let sample = Int16(12000 * sin(2 * Double.pi * 440 * Double(index) / 8000))
            withUnsafeBytes(of: sample.littleEndian) { data.append(contentsOf: $0) }
        }
        return data
    }

    @Test func aToneKeepsItsHandlerUnfrozenSilenceAndNothingDoNot() async throws {
        let pulse = try await PulseAudioServer.start()
        let harness = try await AgentHarness(
            handlers: { directory in
                try Data(Self.tone()).write(to: URL(fileURLWithPath: directory + "/tone.raw"))
                let sources = ["tone": directory + "/tone.raw", "hush": "/dev/zero"]
                return try AgentHarness.audioHandlers(
                    directory, ["tone": "report", "hush": "report", "mute": "report"], suspendAfter: .milliseconds(300)
                ).map { handler in
                    var handler = handler
                    handler.freeze.silentAudioGrace = .seconds(1)
                    if let source = sources[handler.name] {
                        let stream =
                            "PULSE_SERVER=\(pulse.address) /usr/bin/pacat --playback --raw --format=s16le "
                            + "--rate=8000 --channels=1 --property=media.role=music \(source)"
                        handler.command = ["/bin/sh", "-c", stream + " & exec \"$@\"", "sh"] + handler.command
                    }
                    return handler
                }
            },
            configure: { _, configuration in
                configuration.mode = .user
                configuration.sessionEnvironment = ["PULSE_SERVER": pulse.address]
            })
        for name in ["tone", "hush", "mute"] {
            try await harness.startHandler(name, foreground: true)
            #expect(try await harness.activate(name, "music playback options=mixWithOthers") == "event=granted")
        }
        do {
            try await eventually("both streams on the server") {
                (try? await pulse.sinkInputs().filter { $0.role == "music" && !$0.corked }.count) == 2
            }
        } catch {
            Issue.record("\(error)\n\(pulse.diagnostics())")
            throw error
        }
        for name in ["tone", "hush", "mute"] {
            try harness.command(name, "state background")
            try await eventually("\(name) in the background, holding audio") {
                let status = await harness.handlerStatus(name)
                return status?.state == "background" && status?.holdsAudio == true
            }
        }
        // Silent and mute: frozen after their grace (first check 300 ms in, the verdict a second later).
        try await eventually("the silent and the mute handler frozen", timeout: .seconds(20)) {
            let hush = await harness.handlerStatus("hush")?.state
            let mute = await harness.handlerStatus("mute")?.state
            return hush == "suspended" && mute == "suspended"
        }
        // The tone's handler was checked as often meanwhile (and once more), and is still running with its session.
        try await eventually("the tone checked again after the others were frozen", timeout: .seconds(20)) {
            (await harness.agent.status().freeze?.audibleChecks ?? 0) >= 6
        }
        let tone = await harness.handlerStatus("tone")
        #expect(tone?.state == "background", "\(String(describing: tone))")
        #expect(tone?.holdsAudio == true)
        let counters = await harness.agent.status().freeze
        #expect(counters?.silentAudio == 2, "\(String(describing: counters))")
        // Frozen like any other: their sessions were interrupted by the suspension.
        #expect(await harness.session("hush", "music")?.state == .interrupted)
        #expect(await harness.session("mute", "music")?.state == .interrupted)
    }
}
