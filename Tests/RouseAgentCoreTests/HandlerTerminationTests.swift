import RouseAgentCore
import Testing

/// Termination notices (HandlerTermination) and time changes (HandlerMachine+Time) on manual time: the machines take
/// the monotonic `now` the test gives; a test that proves something did not happen moves it on instead of sleeping.
@Suite("Handler rules: termination notices and time changes (manual time)")
struct HandlerTerminationTests {
    static func s(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    /// A handler launched and registered (background).
    static func running(_ rules: HandlerRules = HandlerRules()) -> HandlerMachine {
        var machine = HandlerMachine(rules: rules)
        _ = machine.userStart(now: .zero)
        machine.launched(now: .zero)
        _ = machine.registered(now: s(0.1))
        return machine
    }

    /// A handler launched, registered and suspended (idle 1 s).
    static func suspended() -> HandlerMachine {
        var machine = running()
        #expect(machine.tick(now: s(1.1)).contains(.suspend))
        return machine
    }

    @Test func aRunningHandlerIsToldAndKilledOnlyAfterTheGrace() {
        var now = Duration.zero
        var termination = HandlerTermination()
        let begun = termination.begin(
            reason: .userStopped, lifecycle: .background, connected: true, grace: .seconds(5),
            now: now)
        #expect(begun == [.notify(.userStopped, seconds: 5)])
        #expect(termination.nextDeadline == .seconds(5))
        now += Self.s(4.9)
        #expect(termination.tick(now: now).isEmpty)
        // A second stop (a rule's kill, the agent's stop) inside the grace neither kills nor extends it.
        #expect(
            termination.begin(
                reason: .agentStopping, lifecycle: .background, connected: true, grace: .seconds(5),
                now: now
            ).isEmpty)
        #expect(termination.nextDeadline == .seconds(5))
        now += Self.s(0.1)
        let ended = termination.tick(now: now)
        #expect(ended.last == .kill(.userStopped))
        #expect(!termination.isPending)
        let exitedInGrace = termination.exited()
        #expect(!exitedInGrace)  // the kill's exit is no exit within the grace
    }

    @Test func aHandlerThatExitsWithinTheGraceIsNotKilled() {
        var termination = HandlerTermination()
        _ = termination.begin(
            reason: .handlerRemoved, lifecycle: .active, connected: true, grace: .seconds(5), now: .zero)
        let exitedInGrace = termination.exited()
        #expect(exitedInGrace)
        #expect(termination.tick(now: .seconds(60)).isEmpty)
        #expect(termination.nextDeadline == nil)
    }

    @Test(arguments: [
        (HandlerLifecycle.suspended, true, TerminationReason.userStopped),  // frozen: purged without notice
        (.launching, false, .userStopped),  // not connected yet: cannot be told
        (.background, true, .systemShutdown),  // reboot: none, as iOS
        (.notRunning, true, .agentStopping),
    ])
    func noNoticeIsAKillNow(lifecycle: HandlerLifecycle, connected: Bool, reason: TerminationReason) {
        var termination = HandlerTermination()
        let actions = termination.begin(
            reason: reason, lifecycle: lifecycle, connected: connected, grace: .seconds(5), now: .zero)
        #expect(actions == [.kill(reason)])
        #expect(!termination.isPending)
    }

    @Test func aZeroGraceIsAKillNowAndAShutdownDuringAGraceKillsAtOnce() {
        var termination = HandlerTermination()
        #expect(
            termination.begin(reason: .userStopped, lifecycle: .background, connected: true, grace: .zero, now: .zero)
                == [.kill(.userStopped)])
        _ = termination.begin(
            reason: .userStopped, lifecycle: .background, connected: true, grace: .seconds(5), now: .zero)
        #expect(
            termination.begin(
                reason: .systemShutdown, lifecycle: .background, connected: true, grace: .seconds(5), now: .seconds(1))
                == [.kill(.systemShutdown)])
    }

    @Test func theMachinesStopsCarryTypedReasons() {
        var machine = Self.running()
        #expect(machine.userStop().contains(.kill(reason: .userStopped)))
        #expect(TerminationReason.userStopped.rawValue == "user stopped")
        #expect(!TerminationReason.systemShutdown.givesNotice)
        #expect(TerminationReason("no call reported within the deadline").givesNotice)
    }

    @Test func aRunningHandlerIsToldOfATimeChangeAtOnce() {
        var machine = Self.running()
        #expect(
            machine.timeChanged(clockStep: true, timeZone: false)
                == [.notify(.timeChanged(clockStep: true, timeZone: false))])
        #expect(machine.timeChanged(clockStep: true, timeZone: false).count == 1)
    }

    @Test func aSuspendedHandlerGetsOneNetNoticePerKindAtItsWake() {
        var machine = Self.suspended()
        // Three clock steps, a time-zone change and two reachability flips while frozen: nothing now.
        #expect(machine.timeChanged(clockStep: true, timeZone: false).isEmpty)
        #expect(machine.reachability(false).isEmpty)
        #expect(machine.timeChanged(clockStep: true, timeZone: false).isEmpty)
        #expect(machine.timeChanged(clockStep: false, timeZone: true).isEmpty)
        #expect(machine.reachability(true).isEmpty)
        #expect(machine.timeChanged(clockStep: true, timeZone: false).isEmpty)
        let push = AgentPush(
            id: "p1", pushType: "background", topic: "t", payload: "", apnsID: "a1", expiration: 0, receivedAt: 0)
        let woken = machine.push(push, now: Self.s(10), wallNowMilliseconds: 0)
        #expect(woken.first == .resume)
        let notices = woken.compactMap { action -> AgentMessageKind? in
            guard case .notify(let kind) = action else { return nil }
            return kind
        }
        #expect(notices.filter { if case .timeChanged = $0 { true } else { false } }.count == 1)
        #expect(notices.contains(.timeChanged(clockStep: true, timeZone: true)))
        #expect(notices.filter { if case .reachability = $0 { true } else { false } } == [.reachability(true)])
        // Told once: the next wake carries none.
        _ = machine.complete(pushID: "p1", result: "noData", now: Self.s(11))
        #expect(machine.tick(now: Self.s(12.1)).contains(.suspend))
        let again = machine.push(
            AgentPush(
                id: "p2", pushType: "background", topic: "t", payload: "", apnsID: "a2", expiration: 0, receivedAt: 0),
            now: Self.s(20), wallNowMilliseconds: 0)
        #expect(!again.contains(.notify(.timeChanged(clockStep: true, timeZone: true))))
    }

    @Test func aLaunchingHandlerGetsTheCoalescedNoticeWhenItRegistersAndAGoneOneNone() {
        var machine = HandlerMachine(rules: HandlerRules())
        #expect(machine.timeChanged(clockStep: true, timeZone: false).isEmpty)  // not running: nothing kept
        _ = machine.userStart(now: .zero)
        machine.launched(now: .zero)
        #expect(machine.timeChanged(clockStep: false, timeZone: true).isEmpty)
        let registered = machine.registered(now: Self.s(0.1))
        #expect(registered.contains(.notify(.timeChanged(clockStep: false, timeZone: true))))
        _ = machine.exited(now: Self.s(1))
        _ = machine.userStart(now: Self.s(2))
        machine.launched(now: Self.s(2))
        #expect(
            !machine.registered(now: Self.s(2.1)).contains {
                if case .notify(.timeChanged) = $0 { true } else { false }
            })
    }
}
