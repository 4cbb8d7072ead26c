import RouseAgentCore
import Testing

/// Requests a handler wrote just before it was frozen and the agent read just after (the suspension timer fired in
/// between; a frozen process writes nothing, so whatever arrives while `suspended` predates the freeze): the ones that
/// need the handler running thaw it. Found by `AgentAudibleAudioTests` on a loaded machine: `state active` read after
/// the freeze left a foreground handler frozen, and its `activate` was never answered.
@Suite("Handler rules: requests read after the freeze they raced (manual time)")
struct HandlerLateRequestTests {
    static func s(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    @Test(arguments: [HandlerLifecycle.active, .inactive])
    func comingToTheForegroundWhileSuspendedThawsFirst(_ state: HandlerLifecycle) {
        var machine = HandlerWakeRulesTests.suspended()
        _ = machine.reachability(false)
        let actions = machine.setState(state, now: Self.s(2))
        #expect(actions == [.resume, .notify(.lifecycle(state)), .notify(.reachability(false))])
        #expect(machine.lifecycle == state)
        // In the foreground: not suspended again however long it idles.
        #expect(!machine.tick(now: Self.s(100)).contains(.suspend))
    }

    @Test func aForegroundChangeOfARunningHandlerDoesNotThaw() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.userStart(now: .zero)
        machine.launched(now: .zero)
        _ = machine.registered(now: Self.s(0.1))
        #expect(machine.setState(.active, now: Self.s(0.2)) == [.notify(.lifecycle(.active))])
        #expect(machine.setState(.inactive, now: Self.s(0.3)) == [.notify(.lifecycle(.inactive))])
    }

    @Test func aTaskAskedBeforeTheFreezeIsGrantedAndThawsTheHandler() throws {
        var machine = HandlerWakeRulesTests.suspended()
        let (id, actions) = machine.beginTask(name: "upload", now: Self.s(2))
        let granted = try #require(id)
        #expect(actions.first == .resume)
        #expect(actions.contains(.notify(.lifecycle(.background))))
        #expect(actions.last == .notify(.taskBegun(id: granted, name: "upload")))
        #expect(machine.lifecycle == .background)
        // Held by its task: not suspended while it runs, suspended after it ends and the idle time passes.
        #expect(!machine.tick(now: Self.s(3.5)).contains(.suspend))
        _ = machine.endTask(id: granted, now: Self.s(4))
        #expect(machine.tick(now: Self.s(5.1)).contains(.suspend))
    }

    @Test func aTaskAskedByARunningHandlerDoesNotThaw() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.userStart(now: .zero)
        machine.launched(now: .zero)
        _ = machine.registered(now: Self.s(0.1))
        let (id, actions) = machine.beginTask(name: "upload", now: Self.s(0.2))
        #expect(id != nil)
        #expect(!actions.contains(.resume))
    }
}
