import RouseActivation
import Testing

@Suite("Scenarios: calls, death, delayed grants")
struct CallScenarioTests {
    static let player = HandlerID("player")
    static let phone = HandlerID("phone")
    static let music = Fixture.session("player", "music")
    static let call = SessionID.call(of: phone)

    /// A foreground music player playing non-mixable media.
    static func playing() throws -> ActivationArbiter {
        var arbiter = ActivationArbiter()
        _ = arbiter.handlerStateChanged(player, to: .foreground, now: 0)
        let effects = arbiter.activate(try Fixture.request(music, .playback), now: 0)
        try #require(effects.sent == [Sent(music, .granted)])
        return arbiter
    }

    @Test("An incoming call interrupts playing media, which resumes after the call ends with notify")
    func callInterruptsMediaThenResumes() throws {
        var arbiter = try Self.playing()
        let started = arbiter.callStarted(Self.phone, now: 1)
        #expect(started.sent == [Sent(Self.call, .callActivated), Sent(Self.music, .interruptionBegan(.preempted))])
        #expect(started.hooked == [Hooked(.revoke, Self.music), Hooked(.grant, Self.call)])
        #expect(!arbiter.mayBeSuspended(Self.phone))
        let ended = arbiter.callEnded(Self.phone, notifyOthers: true, now: 2)
        #expect(
            ended.sent == [Sent(Self.call, .callDeactivated), Sent(Self.music, .interruptionEnded(shouldResume: true))])
        #expect(ended.hooked == [Hooked(.revoke, Self.call), Hooked(.grant, Self.music)])
        #expect(arbiter.snapshot.sessions.map(\.state) == [.active])
        #expect(arbiter.mayBeSuspended(Self.phone))
    }

    @Test("Without notify the interrupted media does not resume: its interruption ends and it is inactive")
    func callEndsWithoutNotify() throws {
        var arbiter = try Self.playing()
        _ = arbiter.callStarted(Self.phone, now: 1)
        let ended = arbiter.callEnded(Self.phone, notifyOthers: false, now: 2)
        #expect(
            ended.sent == [
                Sent(Self.call, .callDeactivated), Sent(Self.music, .interruptionEnded(shouldResume: false)),
            ])
        #expect(ended.hooked == [Hooked(.revoke, Self.call)])
        #expect(arbiter.snapshot.sessions.isEmpty)
        // The player may activate again.
        #expect(
            arbiter.activate(try Fixture.request(Self.music, .playback), now: 3).sent == [Sent(Self.music, .granted)])
    }

    @Test(
        "A holder killed mid-call releases its session and the others are told; nothing goes to the dead",
        arguments: [HolderGoneReason.processExited, .connectionClosed, .terminatedByAgent])
    func holderKilledMidCall(_ reason: HolderGoneReason) throws {
        var arbiter = try Self.playing()
        _ = arbiter.callStarted(Self.phone, now: 1)
        let gone = arbiter.holderGone(Self.phone, reason: reason, now: 2)
        #expect(gone.sent == [Sent(Self.music, .interruptionEnded(shouldResume: true))])
        #expect(gone.hooked == [Hooked(.revoke, Self.call), Hooked(.grant, Self.music)])
        #expect(arbiter.snapshot.handlers.map(\.handler) == [Self.player])
        #expect(arbiter.callEnded(Self.phone, now: 3).isEmpty)
    }

    @Test("A delayed request is granted when the call ends; without acceptsDelay it is refused")
    func delayedUntilCallEnds() throws {
        var arbiter = ActivationArbiter()
        _ = arbiter.callStarted(Self.phone, now: 0)
        _ = arbiter.handlerStateChanged(Self.player, to: .foreground, now: 0)
        let refused = arbiter.activate(try Fixture.request(Self.music, .playback), now: 1)
        #expect(refused.sent == [Sent(Self.music, .denied(.insufficientPriority))])
        let delayed = arbiter.activate(try Fixture.request(Self.music, .playback, acceptsDelay: true), now: 1)
        #expect(delayed.sent == [Sent(Self.music, .delayed)])
        #expect(delayed.hooked.isEmpty)
        #expect(arbiter.snapshot.sessions.map(\.state) == [.active, .delayed])
        let ended = arbiter.callEnded(Self.phone, now: 2)
        #expect(ended.sent == [Sent(Self.call, .callDeactivated), Sent(Self.music, .granted)])
        #expect(ended.hooked == [Hooked(.revoke, Self.call), Hooked(.grant, Self.music)])
    }

    @Test("A delayed request withdrawn before the call ends is never granted")
    func delayedWithdrawn() throws {
        var arbiter = ActivationArbiter()
        _ = arbiter.callStarted(Self.phone, now: 0)
        _ = arbiter.handlerStateChanged(Self.player, to: .foreground, now: 0)
        _ = arbiter.activate(try Fixture.request(Self.music, .playback, acceptsDelay: true), now: 1)
        #expect(arbiter.deactivate(Self.music, notifyOthers: true, now: 2).isEmpty)
        #expect(arbiter.callEnded(Self.phone, now: 3).sent == [Sent(Self.call, .callDeactivated)])
    }

    @Test("Calls only through the call path; an alert delays a call, which is activated when the alert ends")
    func callPath() throws {
        var arbiter = ActivationArbiter()
        _ = arbiter.handlerStateChanged(Self.phone, to: .foreground, now: 0)
        let direct = Fixture.session("phone", "voice")
        let asked = arbiter.activate(
            try Fixture.request(direct, .playAndRecord, mode: .voiceChat, priority: .call), now: 0)
        #expect(asked.sent == [Sent(direct, .denied(.callPathRequired))])
        #expect(
            arbiter.activate(try Fixture.request(Self.call, .playAndRecord), now: 0).sent == [
                Sent(Self.call, .denied(.callPathRequired))
            ])

        let siren = Fixture.session("alarm", "siren")
        _ = arbiter.handlerStateChanged(HandlerID("alarm"), to: .foreground, now: 0)
        #expect(
            arbiter.activate(try Fixture.request(siren, .playback, priority: .alert), now: 0).sent == [
                Sent(siren, .granted)
            ])
        #expect(arbiter.callStarted(Self.phone, now: 1).sent == [Sent(Self.call, .delayed)])
        #expect(arbiter.callStarted(Self.phone, now: 1).isEmpty)  // idempotent
        #expect(!arbiter.mayBeSuspended(Self.phone))  // a reported call, even waiting for audio
        let over = arbiter.deactivate(siren, notifyOthers: true, now: 2)
        #expect(over.sent == [Sent(Self.call, .callActivated)])
    }

    @Test("An alert interrupts a call; the call resumes with notify, and loses its audio without")
    func alertInterruptsCall() throws {
        for notify in [true, false] {
            var arbiter = ActivationArbiter()
            _ = arbiter.callStarted(Self.phone, now: 0)
            let siren = Fixture.session("alarm", "siren")
            _ = arbiter.handlerStateChanged(HandlerID("alarm"), to: .foreground, now: 0)
            let alert = arbiter.activate(try Fixture.request(siren, .playback, priority: .alert), now: 1)
            #expect(alert.sent == [Sent(siren, .granted), Sent(Self.call, .interruptionBegan(.preempted))])
            let over = arbiter.deactivate(siren, notifyOthers: notify, now: 2)
            let expected: [Sent] =
                notify
                ? [Sent(Self.call, .interruptionEnded(shouldResume: true))]
                : [Sent(Self.call, .interruptionEnded(shouldResume: false)), Sent(Self.call, .callDeactivated)]
            #expect(over.sent == expected)
            // Unhold: reporting the call again brings its audio back.
            let again = arbiter.callStarted(Self.phone, now: 3)
            #expect(again.sent == (notify ? [] : [Sent(Self.call, .callActivated)]))
        }
    }

    @Test("Interruptions stack: media under navigation under a call resume in turn")
    func stackedInterruptions() throws {
        var arbiter = try Self.playing()
        let nav = Fixture.session("maps", "prompt")
        _ = arbiter.handlerStateChanged(HandlerID("maps"), to: .foreground, now: 0)
        let prompt = arbiter.activate(try Fixture.request(nav, .playback, priority: .navigation), now: 1)
        #expect(prompt.sent == [Sent(nav, .granted), Sent(Self.music, .interruptionBegan(.preempted))])
        let started = arbiter.callStarted(Self.phone, now: 2)
        #expect(started.sent == [Sent(Self.call, .callActivated), Sent(nav, .interruptionBegan(.preempted))])
        #expect(arbiter.snapshot.sessions.first?.interruptedBy == [nav, Self.call])
        let ended = arbiter.callEnded(Self.phone, now: 3)
        #expect(ended.sent == [Sent(Self.call, .callDeactivated), Sent(nav, .interruptionEnded(shouldResume: true))])
        let done = arbiter.deactivate(nav, notifyOthers: true, now: 4)
        #expect(done.sent == [Sent(Self.music, .interruptionEnded(shouldResume: true))])
    }
}
