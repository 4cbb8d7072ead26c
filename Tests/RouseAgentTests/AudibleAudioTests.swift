import Foundation
import RouseActivation
import RouseAgent
import RouseAgentCore
import RouseClock
import RouseTestSupport
import Testing

/// Audible background audio without a server: the watch's schedule and verdicts (``AudibleAudioWatch``), the
/// arbiter's "protected by playback only" and its suspension of a silent player, and the parsers of
/// ``AudioStreamProbe``.
@Suite("Audible background audio: the watch, the arbiter, the parsers")
struct AudibleAudioTests {
    static let grace: Duration = .seconds(10)

    @Test func aSilentPlayerIsSilencedAfterAWholeGraceAndAnAudibleOneNever() {
        var silenced = false  // (a mutating call cannot sit inside #expect)
        var watch = AudibleAudioWatch()
        #expect(watch.nextCheck == nil)
        watch.protected(true, now: .seconds(100), firstCheckAfter: .seconds(1))
        // The first check comes when its background time would otherwise end.
        #expect(watch.nextCheck == .seconds(101))
        #expect(!watch.isDue(now: .milliseconds(100_900)) && watch.isDue(now: .seconds(101)))
        watch.checkStarted()
        #expect(watch.nextCheck == nil)  // none while one runs
        silenced = watch.observed(.silent("no sound"), now: .seconds(101), grace: Self.grace)
        #expect(!silenced)
        #expect(watch.nextCheck == .seconds(111))
        watch.checkStarted()
        silenced = watch.observed(.silent("corked"), now: .seconds(111), grace: Self.grace)
        #expect(silenced)
        #expect(watch.silenced && watch.nextCheck == nil)

        var audible = AudibleAudioWatch()
        audible.protected(true, now: .zero, firstCheckAfter: .seconds(1))
        for second in stride(from: 1, to: 100, by: 10) {
            silenced = audible.observed(.audible, now: .seconds(second), grace: Self.grace)
            #expect(!silenced)
            #expect(audible.nextCheck == .seconds(second + 10))
        }
    }

    @Test func soundBetweenSilencesRestartsTheGraceAndAnUnavailableServerProtects() {
        var silenced = false  // (a mutating call cannot sit inside #expect)
        var watch = AudibleAudioWatch()
        watch.protected(true, now: .zero, firstCheckAfter: .seconds(1))
        silenced = watch.observed(.silent("no stream"), now: .seconds(1), grace: Self.grace)
        #expect(!silenced)
        silenced = watch.observed(.audible, now: .seconds(11), grace: Self.grace)
        #expect(!silenced)
        #expect(watch.silentSince == nil)
        silenced = watch.observed(.silent("no stream"), now: .seconds(21), grace: Self.grace)
        #expect(!silenced)
        silenced = watch.observed(.unavailable("pactl failed"), now: .seconds(31), grace: Self.grace)
        #expect(!silenced)
        silenced = watch.observed(.silent("no stream"), now: .seconds(41), grace: Self.grace)
        #expect(!silenced)
        #expect(!watch.silenced && watch.nextCheck == .seconds(51))
    }

    @Test func theWatchEndsWhenNoSessionIsHeldInTheBackground() {
        var silenced = false  // (a mutating call cannot sit inside #expect)
        var watch = AudibleAudioWatch()
        watch.protected(true, now: .zero, firstCheckAfter: .seconds(1))
        watch.protected(true, now: .seconds(5), firstCheckAfter: .seconds(1))
        #expect(watch.nextCheck == .seconds(1))  // already watched: the plan stands
        _ = watch.observed(.silent("no stream"), now: .seconds(1), grace: .seconds(1))
        silenced = watch.observed(.silent("no stream"), now: .seconds(2), grace: .seconds(1))
        #expect(silenced)
        watch.protected(false, now: .seconds(3), firstCheckAfter: .seconds(1))
        #expect(watch == AudibleAudioWatch())  // nothing planned: nothing polls
        silenced = watch.observed(.silent("no stream"), now: .seconds(9), grace: .seconds(1))
        #expect(!silenced)
    }

    @Test func onlyPlaybackIsCheckedAndASilentPlayerIsSuspendedWithItsSessionInterrupted() throws {
        let player = HandlerID("player")
        let recorder = HandlerID("recorder")
        func request(_ handler: HandlerID, _ name: String, _ category: SessionCategory) throws -> ActivationRequest {
            ActivationRequest(
                session: SessionID(handler: handler, name: name),
                configuration: try SessionConfiguration(category: category))
        }
        // A record session is not checked for sound (its own arbiter: the two would interrupt each other).
        var recording = ActivationArbiter()
        _ = recording.handlerStateChanged(recorder, to: .foreground, now: 0)
        _ = recording.activate(try request(recorder, "memo", .record), now: 0)
        #expect(!recording.protectedOnlyByPlayback(recorder))
        #expect(!recording.handlerSuspended(recorder, now: 1, silentPlayback: true).mayBeSuspended)
        var arbiter = ActivationArbiter()
        // Granted in the foreground (a non-mixable one is refused in the background), then in the background.
        _ = arbiter.handlerStateChanged(player, to: .foreground, now: 0)
        _ = arbiter.activate(try request(player, "music", .playback), now: 0)
        _ = arbiter.handlerStateChanged(player, to: .background, now: 0)
        #expect(arbiter.protectedOnlyByPlayback(player))
        #expect(!arbiter.protectedOnlyByPlayback(HandlerID("nobody")))
        // Refused as before unless the agent found the playback silent.
        #expect(!arbiter.handlerSuspended(player, now: 1).mayBeSuspended)
        let decision = arbiter.handlerSuspended(player, now: 2, silentPlayback: true)
        #expect(decision.mayBeSuspended)
        #expect(
            decision.effects.contains(
                .notify(SessionID(handler: player, name: "music"), .interruptionBegan(.appSuspended))))
        #expect(arbiter.mayBeSuspended(player))
    }

    @Test func sinkInputsAndPeaks() {
        let listing = """
            Sink Input #4
            \tDriver: protocol-native.c
            \tCorked: no
            \tProperties:
            \t\tapplication.process.id = "1234"
            Sink Input #7
            \tCorked: yes
            \tProperties:
            \t\tapplication.process.id = "99"
            Sink Input #8
            \tCorked: no
            """
        #expect(
            AudioStreamProbe.parseSinkInputs(listing) == [
                .init(index: 4, pid: 1234, corked: false), .init(index: 7, pid: 99, corked: true),
                .init(index: 8, pid: nil, corked: false),
            ])
        #expect(AudioStreamProbe.peak([0, 0, 0xFF, 0xFF, 0x10, 0x00][...]) == 16)
        #expect(AudioStreamProbe.peak([0x00, 0x80][...]) == 32768)
        #expect(AudioStreamProbe.peak([0x7F][...]) == 0)
    }
}
