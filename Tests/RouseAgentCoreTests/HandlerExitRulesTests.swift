import RouseAgentCore
import Testing

/// A VoIP push unanswered when its handler exits (HandlerMachine+Exit) on manual time: a clean exit hands it once
/// more to a new launch, unacknowledged until that launch answers it or the rules consume it; a crash, a second
/// unanswered exit, a user-stopped handler consume it as before.
@Suite("Handler rules: a push unanswered at exit (manual time)")
struct HandlerExitRulesTests {
    static func s(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    /// Wall time (UNIX milliseconds) at which the gateway received the pushes.
    static let receivedAt: Int64 = 1_700_000_000_000

    static func voip(_ id: String) -> AgentPush {
        AgentPush(
            id: id, pushType: "voip", topic: "com.example.voip", payload: "e30=", apnsID: "apns-\(id)", expiration: 0,
            receivedAt: receivedAt)
    }

    static func acks(_ actions: [HandlerAction]) -> [String] {
        actions.compactMap { if case .ack(let id) = $0 { id } else { nil } }
    }

    static func launches(_ actions: [HandlerAction]) -> [String] {
        actions.compactMap { if case .launch(let reason) = $0 { reason } else { nil } }
    }

    /// A handler launched for push `p1`, registered at 0.1 s: `p1` handed over, owed a report by 5.1 s.
    static func owing() -> HandlerMachine {
        var machine = HandlerMachine(rules: HandlerRules())
        let launch = machine.push(voip("p1"), now: .zero, wallNowMilliseconds: receivedAt)
        #expect(launch == [.launch(reason: "voipPush")])
        machine.launched(now: .zero)
        let handed = machine.registered(now: s(0.1))
        #expect(handed.contains(.deliver(voip("p1"), mustReport: true, deadlineSeconds: 5)))
        return machine
    }

    /// `machine` exited cleanly at `at` with `p1` unanswered, and was launched again at once.
    static func relaunched(_ machine: inout HandlerMachine, at: Duration) {
        let wall = receivedAt + at.components.seconds * 1000 + at.components.attoseconds / 1_000_000_000_000_000
        let actions = machine.exited(now: at, exit: .clean, wallNowMilliseconds: wall)
        #expect(launches(actions) == ["voipPush"])
        #expect(acks(actions).isEmpty)
        machine.launched(now: at)
    }

    @Test func aCleanExitHandsTheUnansweredPushToANewLaunchAndAcknowledgesItOnlyWhenReported() {
        var machine = Self.owing()
        let exit = machine.exited(now: Self.s(1), exit: .clean, wallNowMilliseconds: Self.receivedAt + 1000)
        // Not acknowledged: the gateway must not hear of it before the new launch has had it.
        #expect(Self.acks(exit).isEmpty)
        #expect(Self.launches(exit) == ["voipPush"])
        #expect(machine.lifecycle == .launching)
        #expect(machine.waiting == [Self.voip("p1")])
        machine.launched(now: Self.s(1))
        // The new launch gets the same push, owed a report from its registration.
        let handed = machine.registered(now: Self.s(1.5))
        #expect(handed.contains(.deliver(Self.voip("p1"), mustReport: true, deadlineSeconds: 5)))
        #expect(machine.owedReports["p1"] == Self.s(6.5))
        let reported = machine.reportCall(pushID: "p1", callID: "c1", now: Self.s(2))
        #expect(Self.acks(reported) == ["p1"])
        #expect(machine.handedAgain.isEmpty)
        #expect(machine.owedPushes.isEmpty)
        #expect(machine.strikeCount == 0)
    }

    @Test func aSecondUnansweredExitConsumesThePush() {
        var machine = Self.owing()
        Self.relaunched(&machine, at: Self.s(1))
        _ = machine.registered(now: Self.s(1.5))
        let second = machine.exited(now: Self.s(2), exit: .clean, wallNowMilliseconds: Self.receivedAt + 2000)
        #expect(Self.acks(second) == ["p1"])
        #expect(Self.launches(second).isEmpty)
        #expect(machine.lifecycle == .notRunning)
        #expect(machine.handedAgain.isEmpty)
    }

    @Test func aCrashConsumesThePushAtOnceAndACrashOfTheNewLaunchToo() {
        var crashed = Self.owing()
        let crash = crashed.exited(now: Self.s(1), exit: .crashed, wallNowMilliseconds: Self.receivedAt + 1000)
        #expect(Self.acks(crash) == ["p1"])
        #expect(Self.launches(crash).isEmpty)
        #expect(crashed.lifecycle == .notRunning)
        // The new launch after a clean exit crashes: consumed, not launched a third time.
        var machine = Self.owing()
        Self.relaunched(&machine, at: Self.s(1))
        _ = machine.registered(now: Self.s(1.5))
        let second = machine.exited(now: Self.s(2), exit: .crashed, wallNowMilliseconds: Self.receivedAt + 2000)
        #expect(Self.acks(second) == ["p1"])
        #expect(Self.launches(second).isEmpty)
    }

    @Test func theNewLaunchIsHeldToTheLaunchDeadlineAndItsStrike() {
        var machine = Self.owing()
        Self.relaunched(&machine, at: Self.s(1))
        #expect(machine.nextDeadline(now: Self.s(1)) == Self.s(11))
        let late = machine.tick(now: Self.s(11))
        #expect(late.contains(.kill(reason: "did not register within the launch deadline")))
        #expect(machine.strikeCount == 1)
        // Killed before it registered: the push handed again is consumed (acknowledged), not kept for a third launch.
        let gone = machine.exited(now: Self.s(11.1))
        #expect(Self.acks(gone) == ["p1"])
        #expect(Self.launches(gone).isEmpty)
        #expect(machine.handedAgain.isEmpty)
    }

    @Test func theNewLaunchIsHeldToTheReportDeadlineAndItsStrike() {
        var machine = Self.owing()
        Self.relaunched(&machine, at: Self.s(1))
        _ = machine.registered(now: Self.s(2))
        #expect(machine.nextDeadline(now: Self.s(2)) == Self.s(7))
        let late = machine.tick(now: Self.s(7))
        #expect(Self.acks(late) == ["p1"])
        #expect(late.contains(.kill(reason: "no call reported within the deadline")))
        #expect(machine.strikeCount == 1)
        #expect(machine.handedAgain.isEmpty)
    }

    @Test func aUserStoppedHandlerIsNotLaunchedAgainForIt() {
        var machine = Self.owing()
        #expect(machine.userStop().contains(.kill(reason: .userStopped)))
        let exit = machine.exited(now: Self.s(1), exit: .clean, wallNowMilliseconds: Self.receivedAt + 1000)
        #expect(Self.acks(exit) == ["p1"])
        #expect(Self.launches(exit).isEmpty)
        #expect(machine.lifecycle == .notRunning)
    }

    @Test func aHandlerWhoseVoIPLaunchesAreStoppedIsNotLaunchedAgainForIt() {
        var rules = HandlerRules()
        rules.strikeLimit = 1
        var machine = HandlerMachine(rules: rules)
        _ = machine.push(Self.voip("p1"), now: .zero, wallNowMilliseconds: Self.receivedAt)
        machine.launched(now: .zero)
        _ = machine.registered(now: Self.s(0.1))
        _ = machine.push(Self.voip("p2"), now: Self.s(3), wallNowMilliseconds: Self.receivedAt + 3000)
        // p1's deadline passes: a strike, the limit; p2 is still owed when the handler exits by itself.
        _ = machine.tick(now: Self.s(5.1))
        #expect(machine.voipBlocked)
        let exit = machine.exited(now: Self.s(5.2), exit: .clean, wallNowMilliseconds: Self.receivedAt + 5200)
        #expect(Self.acks(exit) == ["p2"])
        #expect(Self.launches(exit).isEmpty)
    }

    @Test func aPushStaleByTheNewLaunchIsHandedWithoutAReportOwed() {
        var machine = Self.owing()
        // The handler exits 61 s after the gateway received the push (past the 60 s staleness).
        let exit = machine.exited(now: Self.s(1), exit: .clean, wallNowMilliseconds: Self.receivedAt + 61_000)
        #expect(Self.launches(exit) == ["voipPush"])
        machine.launched(now: Self.s(1))
        let handed = machine.registered(now: Self.s(1.5))
        #expect(handed.contains(.deliver(Self.voip("p1"), mustReport: false, deadlineSeconds: 0)))
        #expect(Self.acks(handed) == ["p1"])
        #expect(machine.owedReports.isEmpty)
        #expect(machine.handedAgain.isEmpty)
    }

    @Test func onlyTheUnansweredPushesGoToTheNewLaunch() {
        var machine = Self.owing()
        _ = machine.push(Self.voip("p2"), now: Self.s(0.5), wallNowMilliseconds: Self.receivedAt + 500)
        _ = machine.reportCall(pushID: "p1", callID: "c1", now: Self.s(0.6))
        _ = machine.callEnded(callID: "c1", now: Self.s(0.7))
        let exit = machine.exited(now: Self.s(1), exit: .clean, wallNowMilliseconds: Self.receivedAt + 1000)
        #expect(Self.acks(exit).isEmpty)
        #expect(machine.waiting == [Self.voip("p2")])
    }
}
