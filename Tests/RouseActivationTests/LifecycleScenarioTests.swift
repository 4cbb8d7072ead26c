import RouseActivation
import Testing

@Suite("Scenarios: background, ducking, suspension, routes, re-activation, snapshot, hook")
struct LifecycleScenarioTests {
    static let player = HandlerID("player")
    static let music = Fixture.session("player", "music")

    @Test("A background non-mixable request is denied; mixable is granted; a call lifts the rule")
    func background() throws {
        var arbiter = ActivationArbiter()
        let denied = arbiter.activate(try Fixture.request(Self.music, .playback), now: 0)
        #expect(denied.sent == [Sent(Self.music, .denied(.cannotInterruptOthers))])
        let soft = Fixture.session("player", "soft")
        let mixing = arbiter.activate(try Fixture.request(soft, .playback, options: [.mixWithOthers]), now: 0)
        #expect(mixing.sent == [Sent(soft, .granted)])
        _ = arbiter.callStarted(Self.player, now: 1)
        let inCall = arbiter.activate(try Fixture.request(Self.music, .playAndRecord, priority: .alert), now: 2)
        #expect(inCall.sent.first == Sent(Self.music, .granted))
    }

    @Test("Ducking begins and ends; a ducked session that is interrupted gets duckEnded first")
    func ducking() throws {
        var arbiter = ActivationArbiter()
        for handler in ["player", "maps", "alarm"] {
            _ = arbiter.handlerStateChanged(HandlerID(handler), to: .foreground, now: 0)
        }
        _ = arbiter.activate(try Fixture.request(Self.music, .playback), now: 0)
        let nav = Fixture.session("maps", "prompt")
        let prompt = try Fixture.request(nav, .playback, options: [.duckOthers], priority: .navigation)
        let ducked = arbiter.activate(prompt, now: 1)
        #expect(ducked.sent == [Sent(nav, .granted), Sent(Self.music, .duckBegan)])
        #expect(arbiter.snapshot.sessions.map(\.state) == [.ducked, .active])
        let over = arbiter.deactivate(nav, notifyOthers: false, now: 2)
        #expect(over.sent == [Sent(Self.music, .duckEnded)])

        _ = arbiter.activate(prompt, now: 3)
        let siren = Fixture.session("alarm", "siren")
        let alert = arbiter.activate(try Fixture.request(siren, .playback, priority: .alert), now: 4)
        #expect(
            alert.sent == [
                Sent(siren, .granted), Sent(Self.music, .duckEnded), Sent(Self.music, .interruptionBegan(.preempted)),
                Sent(nav, .interruptionBegan(.preempted)),
            ])
        // The ducker resumes first and ducks again the media it resumes with.
        let back = arbiter.deactivate(siren, notifyOthers: true, now: 5)
        #expect(
            back.sent == [
                Sent(Self.music, .interruptionEnded(shouldResume: true)),
                Sent(nav, .interruptionEnded(shouldResume: true)),
                Sent(Self.music, .duckBegan),
            ])
        // Deactivating a ducked session closes its duck.
        #expect(arbiter.deactivate(Self.music, notifyOthers: true, now: 6).sent == [Sent(Self.music, .duckEnded)])
    }

    @Test("Suspension: refused while playing; else appSuspended, victims resume, delayed denied, thaw ends it")
    func suspension() throws {
        var arbiter = ActivationArbiter()
        _ = arbiter.handlerStateChanged(Self.player, to: .foreground, now: 0)
        _ = arbiter.activate(try Fixture.request(Self.music, .playback), now: 0)
        let refused = arbiter.handlerSuspended(Self.player, now: 1)
        #expect(!refused.mayBeSuspended && refused.effects.isEmpty)

        let game = HandlerID("game")
        let effects = Fixture.session("game", "effects")
        _ = arbiter.handlerStateChanged(game, to: .foreground, now: 1)
        let solo = arbiter.activate(try Fixture.request(effects, .soloAmbient), now: 1)
        #expect(solo.sent == [Sent(effects, .granted), Sent(Self.music, .interruptionBegan(.preempted))])
        let waiting = Fixture.session("game", "later")
        _ = arbiter.callStarted(HandlerID("phone"), now: 2)
        #expect(
            arbiter.activate(try Fixture.request(waiting, .soloAmbient, acceptsDelay: true), now: 2).sent == [
                Sent(waiting, .delayed)
            ])

        let decision = arbiter.handlerSuspended(game, now: 3)
        #expect(decision.mayBeSuspended)
        // The game's sessions are both interrupted by the call; the delayed one is dropped.
        #expect(decision.effects.sent == [Sent(waiting, .denied(.appSuspended))])
        #expect(
            arbiter.activate(try Fixture.request(waiting, .ambient), now: 3).sent == [
                Sent(waiting, .denied(.appSuspended))
            ])
        // The call ends: music was blocked by the call and by the (suspended) game — only the call holds it now.
        let ended = arbiter.callEnded(HandlerID("phone"), now: 4)
        #expect(
            ended.sent == [
                Sent(SessionID.call(of: HandlerID("phone")), .callDeactivated),
                Sent(Self.music, .interruptionEnded(shouldResume: true)),
            ])
        let thawed = arbiter.handlerStateChanged(game, to: .background, now: 5)
        #expect(thawed.sent == [Sent(effects, .interruptionEnded(shouldResume: false))])
        #expect(arbiter.snapshot.sessions.map(\.session) == [Self.music])
    }

    @Test("Suspending an active holder interrupts it with appSuspended and lets its victims resume")
    func suspendActive() throws {
        var arbiter = ActivationArbiter()
        let game = HandlerID("game")
        let effects = Fixture.session("game", "effects")
        _ = arbiter.handlerStateChanged(Self.player, to: .foreground, now: 0)
        _ = arbiter.handlerStateChanged(game, to: .foreground, now: 0)
        _ = arbiter.activate(try Fixture.request(Self.music, .playback), now: 0)
        _ = arbiter.activate(try Fixture.request(effects, .soloAmbient), now: 1)
        let decision = arbiter.handlerSuspended(game, now: 2)
        #expect(
            decision.effects.sent == [
                Sent(effects, .interruptionBegan(.appSuspended)),
                Sent(Self.music, .interruptionEnded(shouldResume: true)),
            ])
        #expect(decision.effects.hooked == [Hooked(.revoke, effects), Hooked(.grant, Self.music)])
        #expect(arbiter.snapshot.handlers.first { $0.handler == game }?.state == .suspended)
    }

    @Test("Route changes go to every active session, not to interrupted or delayed ones")
    func routes() throws {
        var arbiter = ActivationArbiter()
        _ = arbiter.handlerStateChanged(Self.player, to: .foreground, now: 0)
        _ = arbiter.activate(try Fixture.request(Self.music, .playback), now: 0)
        let other = Fixture.session("player", "other")
        _ = arbiter.activate(try Fixture.request(other, .ambient), now: 0)
        let changed = arbiter.routeChanged(.oldDeviceUnavailable, now: 1)
        #expect(
            changed.sent == [
                Sent(Self.music, .routeChanged(.oldDeviceUnavailable)),
                Sent(other, .routeChanged(.oldDeviceUnavailable)),
            ])
        _ = arbiter.callStarted(HandlerID("phone"), now: 2)
        #expect(
            arbiter.routeChanged(.newDeviceAvailable, now: 3).sent == [
                Sent(SessionID.call(of: HandlerID("phone")), .routeChanged(.newDeviceAvailable))
            ])
    }

    @Test("Re-activation: same configuration is granted again with no other effect; another is refused")
    func reactivation() throws {
        var arbiter = ActivationArbiter()
        _ = arbiter.handlerStateChanged(Self.player, to: .foreground, now: 0)
        let request = try Fixture.request(Self.music, .playback)
        _ = arbiter.activate(request, now: 0)
        #expect(arbiter.activate(request, now: 1) == [.notify(Self.music, .granted)])
        let changed = try Fixture.request(Self.music, .playback, options: [.mixWithOthers])
        #expect(arbiter.activate(changed, now: 1).sent == [Sent(Self.music, .denied(.alreadyActive))])
        #expect(arbiter.deactivate(Fixture.session("player", "unknown"), notifyOthers: true, now: 2).isEmpty)
    }

    @Test("Snapshot: who holds what and who waits, as JSON and text")
    func snapshot() throws {
        var arbiter = ActivationArbiter()
        _ = arbiter.handlerStateChanged(Self.player, to: .foreground, now: 0)
        _ = arbiter.activate(try Fixture.request(Self.music, .playback, mode: .spokenAudio), now: 0)
        _ = arbiter.callStarted(HandlerID("phone"), now: 1)
        let later = Fixture.session("player", "later")
        _ = arbiter.activate(try Fixture.request(later, .playback, acceptsDelay: true), now: 2)
        let snapshot = arbiter.snapshot
        #expect(snapshot.sessions.map(\.state) == [.interrupted, .active, .delayed])
        #expect(snapshot.sessions[0].interruptedBy == [SessionID.call(of: HandlerID("phone"))])
        #expect(snapshot.sessions[1].isCall)
        #expect(snapshot.handlers.map(\.inCall) == [true, false])
        let json = snapshot.json()
        #expect(json.contains(#""state" : "delayed""#))
        #expect(json.contains(#""interruptionReason" : "preempted""#))
        #expect(
            snapshot.text.contains(
                "player/music\tmedia\tplayback\tspokenAudio\t-\tinterrupted(preempted) by phone/call"))
        let decoded = try JSONDecoderFactory.decode(ActivationSnapshot.self, json)
        #expect(decoded == snapshot)
    }

    @Test("Hook events carry the documented argv and environment, with the roles after the step")
    func hookContract() throws {
        var arbiter = ActivationArbiter()
        _ = arbiter.handlerStateChanged(Self.player, to: .foreground, now: 0)
        _ = arbiter.activate(try Fixture.request(Self.music, .playback), now: 0)
        let nav = Fixture.session("maps", "prompt")
        let effects = arbiter.activate(
            try Fixture.request(nav, .playback, options: [.duckOthers], priority: .navigation), now: 1)
        let events = effects.compactMap { effect -> HookEvent? in
            guard case .hook(let event) = effect else { return nil }
            return event
        }
        #expect(events.count == 1)
        let event = try #require(events.first)
        #expect(event.arguments == ["grant"])
        #expect(
            event.environment == [
                "ROUSE_EVENT": "grant", "ROUSE_SESSION": "maps/prompt", "ROUSE_HANDLER": "maps",
                "ROUSE_ROLE": "navigation", "ROUSE_CATEGORY": "playback", "ROUSE_MODE": "default",
                "ROUSE_OPTIONS": "mixWithOthers,duckOthers", "ROUSE_ACTIVE_ROLES": "media,navigation",
                "ROUSE_DUCKING_ROLES": "navigation",
            ])
    }
}
