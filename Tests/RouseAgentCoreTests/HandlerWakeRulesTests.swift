import RouseAgentCore
import Testing

/// The socket-woken rules of a handler (HandlerMachine+Wakes) on manual time: socket wakes owe a report like a VoIP
/// push (deadline, strikes, block), keep-alives get a budget and end in suspension.
@Suite("Handler rules: socket wakes and keep-alives (manual time)")
struct HandlerWakeRulesTests {
    static func s(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    /// A handler launched, registered and suspended (idle 1 s).
    static func suspended(_ rules: HandlerRules = HandlerRules()) -> HandlerMachine {
        var machine = HandlerMachine(rules: rules)
        _ = machine.userStart(now: .zero)
        machine.launched(now: .zero)
        _ = machine.registered(now: s(0.1))
        let actions = machine.tick(now: s(1.1))
        #expect(actions.contains(.suspend))
        return machine
    }

    @Test func aSuspendedHandlerIsResumedAndOwesAReportWithinTheVoIPDeadline() {
        var machine = Self.suspended()
        let actions = machine.socketWake(id: "wake-1", now: Self.s(10)) ?? []
        #expect(actions.first == .resume)
        #expect(actions.contains(.notify(.voipSocketWake(wake: "wake-1", mustReport: true, seconds: 5))))
        #expect(machine.nextDeadline(now: Self.s(10)) == Self.s(15))
        // Reported with the wake's id: nothing owed, no strike, suspended again after the idle time.
        _ = machine.reportCall(pushID: "wake-1", callID: "c1", now: Self.s(11))
        _ = machine.callEnded(callID: "c1", now: Self.s(12))
        #expect(machine.owedWakes.isEmpty)
        let later = machine.tick(now: Self.s(13))
        #expect(later.contains(.suspend))
        #expect(machine.strikeCount == 0)
    }

    @Test func noReportIsAStrikeAndAKillAndThreeStopTheWakes() {
        var machine = Self.suspended()
        var now = Self.s(10)
        for strike in 1...3 {
            let woken = machine.socketWake(id: "wake-\(strike)", now: now) ?? []
            if strike > 1 {
                // Gone after the kill: launched for the wake, which is owed from the registration.
                #expect(woken == [.launch(reason: "voipSocket")])
                machine.launched(now: now)
                _ = machine.registered(now: now)
            }
            now += Self.s(5)
            let actions = machine.tick(now: now)
            #expect(actions.contains(.kill(reason: "no call reported within the deadline of a socket wake")))
            #expect(machine.strikeCount == strike)
            _ = machine.exited(now: now)
        }
        #expect(machine.voipBlocked)
        // Gone and blocked: a wake is dropped (nil), not a launch.
        let blocked = machine.socketWake(id: "wake-4", now: now)
        #expect(blocked == nil)
        _ = machine.reregister()
        let launched = machine.socketWake(id: "wake-5", now: now)
        #expect(launched == [.launch(reason: "voipSocket")])
    }

    @Test func aGoneHandlerIsLaunchedAndOwesFromItsRegistration() {
        var machine = HandlerMachine(rules: HandlerRules())
        let launch = machine.socketWake(id: "wake-1", now: .zero)
        #expect(launch == [.launch(reason: "voipSocket")])
        machine.launched(now: .zero)
        let actions = machine.registered(now: Self.s(2))
        #expect(actions.contains(.notify(.voipSocketWake(wake: "wake-1", mustReport: true, seconds: 5))))
        #expect(machine.owedWakes["wake-1"] == Self.s(7))
        let handled = [
            machine.wakeHandled(id: "wake-1", now: Self.s(3)), machine.wakeHandled(id: "wake-1", now: Self.s(3)),
        ]
        #expect(handled == [true, false])
    }

    @Test func aLaunchThatNeverRegistersIsAStrike() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.socketWake(id: "wake-1", now: .zero)
        machine.launched(now: .zero)
        let actions = machine.tick(now: Self.s(10))
        #expect(actions.contains(.kill(reason: "did not register within the launch deadline")))
        #expect(machine.strikeCount == 1)
    }

    /// A handler that dies at once (or cannot be launched) while a wake waits for it: each exit is a strike and
    /// leaves its sockets unarmed for the backoff, so unread data relaunches it at most `strikeLimit` times.
    @Test func anExitBeforeRegisteringWithAWakeWaitingIsAStrikeAndABackoff() {
        var machine = HandlerMachine(rules: HandlerRules())
        var now = Duration.zero
        var launches = 0
        while let actions = machine.socketWake(id: "wake-\(launches)", now: now) {
            #expect(actions == [.launch(reason: "voipSocket")])
            launches += 1
            _ = machine.exited(now: now)  // launchFailed, or dead before registering
            #expect(machine.strikeCount == launches)
            #expect(machine.socketBackoffUntil == now + Self.s(5))
            #expect(machine.nextDeadline(now: now) == now + Self.s(5))
            _ = machine.tick(now: now + Self.s(4.9))
            #expect(machine.socketBackoffUntil != nil)
            now += Self.s(5)
            let ended = machine.tick(now: now)
            #expect(machine.socketBackoffUntil == nil)
            #expect(!ended.isEmpty)  // the agent re-arms the sockets when it applies these
            if launches > 10 { break }
        }
        #expect(launches == 3)
        #expect(machine.voipBlocked)
    }

    @Test func anExitOwingAWakeIsAStrikeButALaunchDeadlineStrikeIsNotStruckAgainAtExit() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.socketWake(id: "wake-1", now: .zero)
        machine.launched(now: .zero)
        _ = machine.tick(now: Self.s(10))
        _ = machine.exited(now: Self.s(10))
        #expect(machine.strikeCount == 1)
        #expect(machine.socketBackoffUntil == Self.s(15))
        _ = machine.tick(now: Self.s(15))
        _ = machine.socketWake(id: "wake-2", now: Self.s(20))
        machine.launched(now: Self.s(20))
        _ = machine.registered(now: Self.s(21))
        #expect(machine.owedWakes["wake-2"] != nil)
        _ = machine.exited(now: Self.s(22))
        #expect(machine.strikeCount == 2)
        #expect(machine.socketBackoffUntil == Self.s(27))
    }

    @Test func inACallOrInTheForegroundNoReportIsOwed() {
        var machine = Self.suspended()
        _ = machine.setState(.active, now: Self.s(2))
        let actions = machine.socketWake(id: "wake-1", now: Self.s(3)) ?? []
        #expect(actions == [.notify(.voipSocketWake(wake: "wake-1", mustReport: false, seconds: 0))])
        #expect(machine.owedWakes.isEmpty)
    }

    @Test func aKeepAliveResumesForItsBudgetThenSuspends() {
        var rules = HandlerRules()
        rules.keepAliveBudget = Self.s(10)
        var machine = Self.suspended(rules)
        let actions = machine.keepAliveDue(id: "k1", now: Self.s(600))
        #expect(actions.first == .resume)
        #expect(actions.contains(.notify(.keepAlive(id: "k1", seconds: 10))))
        // Kept awake for the budget (idle time does not suspend it), then suspended at once.
        let during = machine.tick(now: Self.s(605))
        #expect(!during.contains(.suspend))
        #expect(machine.nextDeadline(now: Self.s(605)) == Self.s(610))
        let end = machine.tick(now: Self.s(610))
        #expect(end.contains(.suspend))
        #expect(machine.lifecycle == .suspended)
    }

    @Test func keepAliveDoneSuspendsAfterTheIdleTimeAndALaunchGetsItAtRegistration() {
        var machine = Self.suspended()
        _ = machine.keepAliveDue(id: "k1", now: Self.s(600))
        let done = [
            machine.keepAliveDone(id: "k1", now: Self.s(601)), machine.keepAliveDone(id: "k1", now: Self.s(601)),
        ]
        #expect(done == [true, false])
        let idle = machine.tick(now: Self.s(602))
        #expect(idle.contains(.suspend))
        var gone = HandlerMachine(rules: HandlerRules())
        let launch = gone.keepAliveDue(id: "k2", now: .zero)
        #expect(launch == [.launch(reason: "keepAlive")])
        gone.launched(now: .zero)
        let registered = gone.registered(now: Self.s(1))
        #expect(registered.contains(.notify(.keepAlive(id: "k2", seconds: 10))))
        _ = gone.userStop()
        let stopped = gone.keepAliveDue(id: "k3", now: Self.s(2))
        #expect(stopped.isEmpty)
    }
}
