import RouseAgentCore
import Testing

/// A request a handler wrote just before it was frozen and the agent read just after (the suspension timer fired in
/// between; a frozen process writes nothing, so whatever arrives while `suspended` predates the freeze): the handler
/// is thawed before the request is handled. Found on a loaded machine: `state active` read after the freeze left a
/// foreground handler frozen and its `activate` unanswered (`AgentAudibleAudioTests`); a watched socket's answer
/// waited in a frozen handler (`AgentVoIPSocketTests`).
@Suite("Handler rules: requests read after the freeze they raced (manual time)")
struct HandlerLateRequestTests {
    static func s(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    @Test func aRequestReadWhileSuspendedThawsIntoTheBackgroundWithTheCoalescedNotices() {
        var machine = HandlerWakeRulesTests.suspended()
        _ = machine.reachability(false)
        let actions = machine.requestReadWhileSuspended(now: Self.s(2))
        #expect(actions == [.resume, .notify(.lifecycle(.background)), .notify(.reachability(false))])
        #expect(machine.lifecycle == .background)
        // Its idle time starts again at the read: suspended one idle time (1 s) later, not before.
        #expect(!machine.tick(now: Self.s(2.9)).contains(.suspend))
        #expect(machine.tick(now: Self.s(3.0)).contains(.suspend))
    }

    @Test func thenItsForegroundRequestIsAnOrdinaryOne() {
        var machine = HandlerWakeRulesTests.suspended()
        _ = machine.requestReadWhileSuspended(now: Self.s(2))
        #expect(machine.setState(.active, now: Self.s(2)) == [.notify(.lifecycle(.active))])
        #expect(!machine.tick(now: Self.s(100)).contains(.suspend))
    }

    @Test func theBackgroundBudgetGoesOnFromWhereItWas() {
        var machine = HandlerWakeRulesTests.suspended()
        let before = machine.budgetRemaining(now: Self.s(2))
        _ = machine.requestReadWhileSuspended(now: Self.s(2))
        #expect(machine.budgetRemaining(now: Self.s(2)) == before)
        #expect(before != nil)
    }

    @Test(arguments: ["running", "notRunning"])
    func aHandlerThatIsNotSuspendedIsLeftAsItIs(_ state: String) {
        var machine = HandlerMachine(rules: HandlerRules())
        if state == "running" {
            _ = machine.userStart(now: .zero)
            machine.launched(now: .zero)
            _ = machine.registered(now: Self.s(0.1))
        }
        let lifecycle = machine.lifecycle
        #expect(machine.requestReadWhileSuspended(now: Self.s(0.2)).isEmpty)
        #expect(machine.lifecycle == lifecycle)
    }
}
