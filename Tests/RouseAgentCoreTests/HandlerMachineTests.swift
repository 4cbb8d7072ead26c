import Foundation
import RouseAgentCore
import Testing

@Suite("Handler rules (value-type machine, manual time)", .timeLimit(.minutes(1)))
struct HandlerMachineTests {
    static let wall: Int64 = 1_800_000_000_000

    static func push(_ id: String, type: String = "voip", receivedAt: Int64 = wall) -> AgentPush {
        AgentPush(
            id: id, pushType: type, topic: "com.example.rouse.voip", payload: "", apnsID: "apns-\(id)",
            expiration: 0, receivedAt: receivedAt)
    }

    static func s(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    @Test func snapshotRestoresHeldPushAndTokensAlwaysAndTasksOnlyForARunningProcess() throws {
        var rules = HandlerRules()
        rules.backgroundBurst = 1
        rules.backgroundPerHour = 0.001
        var machine = HandlerMachine(rules: rules)
        _ = machine.push(Self.push("b1", type: "background"), now: .zero, wallNowMilliseconds: Self.wall)
        machine.launched()
        _ = machine.registered(now: Self.s(0.1))
        _ = machine.complete(pushID: "b1", result: "newData", now: Self.s(0.2))
        _ = machine.push(Self.push("b2", type: "background"), now: Self.s(0.3), wallNowMilliseconds: Self.wall)
        _ = machine.beginTask(name: "upload", now: Self.s(1))
        let snapshot = machine.snapshot(now: Self.s(11), wallEpochMilliseconds: Self.wall)
        #expect(snapshot.held?.id == "b2")
        #expect(snapshot.tasks == [1: "upload"])
        #expect(abs((snapshot.budgetUsedSeconds ?? 0) - 10.9) < 1e-6)
        // Through JSON, as the agent's archive stores it.
        let decoded = try JSONDecoder().decode(
            HandlerMachine.Snapshot.self, from: try JSONEncoder().encode(snapshot))
        var stopped = HandlerMachine(rules: rules)
        stopped.restore(decoded, now: .zero, running: false)
        #expect(stopped.held?.id == "b2")
        #expect(stopped.availableTokens(now: .zero) < 0.01)
        #expect(stopped.tasks.isEmpty)
        var running = HandlerMachine(rules: rules)
        running.restore(decoded, now: .zero, running: true)
        running.launched()
        _ = running.registered(now: .seconds(100))
        #expect(running.tasks == [1: "upload"])
        // The budget keeps running from where it was: 10.9 s of 30 used.
        #expect(abs((running.budgetRemaining(now: .seconds(100)) ?? 0) - 19.1) < 0.01)
    }

    @Test func voipLaunchesThenDeliversAndAcksAfterReport() {
        var machine = HandlerMachine(rules: HandlerRules())
        #expect(
            machine.push(Self.push("1"), now: .zero, wallNowMilliseconds: Self.wall) == [.launch(reason: "voipPush")])
        machine.launched()
        let delivered = machine.registered(now: Self.s(0.1))
        #expect(delivered == [.deliver(Self.push("1"), mustReport: true, deadlineSeconds: 5)])
        let reported = machine.reportCall(pushID: "1", callID: "c", now: Self.s(0.2))
        #expect(reported.first == .ack(pushID: "1"))
        #expect(machine.tick(now: Self.s(10)).allSatisfy { if case .kill = $0 { false } else { true } })
    }

    @Test func missedReportKillsStrikesAndBlocksAfterThree() {
        var machine = HandlerMachine(rules: HandlerRules())
        for round in 0..<3 {
            let start = Self.s(Double(round) * 100)
            _ = machine.push(Self.push("\(round)"), now: start, wallNowMilliseconds: Self.wall)
            machine.launched()
            _ = machine.registered(now: start)
            #expect(machine.nextDeadline(now: start) == start + .seconds(5))
            let actions = machine.tick(now: start + .seconds(5))
            #expect(actions.contains(.ack(pushID: "\(round)")))
            #expect(actions.contains(.kill(reason: "no call reported within the deadline")))
            _ = machine.exited(now: start + .seconds(5))
        }
        #expect(machine.strikeCount == 3)
        #expect(machine.voipBlocked)
        let dropped = machine.push(Self.push("x"), now: Self.s(400), wallNowMilliseconds: Self.wall)
        #expect(dropped.first == .ack(pushID: "x"))
        #expect(!dropped.contains(.launch(reason: "voipPush")))
        _ = machine.reregister()
        #expect(!machine.voipBlocked && machine.strikeCount == 0)
        #expect(
            machine.push(Self.push("y"), now: Self.s(401), wallNowMilliseconds: Self.wall) == [
                .launch(reason: "voipPush")
            ])
    }

    @Test(arguments: ["foreground", "inCall", "stale"])
    func exemptionsCostNoStrike(_ exemption: String) {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.push(Self.push("0", type: "background"), now: .zero, wallNowMilliseconds: Self.wall)
        machine.launched()
        _ = machine.registered(now: .zero)
        var receivedAt = Self.wall
        switch exemption {
        case "foreground": _ = machine.setState(.active, now: .zero)
        case "inCall": _ = machine.reportCall(pushID: nil, callID: "ongoing", now: .zero)
        default: receivedAt = Self.wall - 120_000
        }
        let push = Self.push("1", receivedAt: receivedAt)
        let actions = machine.push(push, now: .zero, wallNowMilliseconds: Self.wall)
        #expect(actions.contains(.deliver(push, mustReport: false, deadlineSeconds: 0)))
        #expect(actions.contains(.ack(pushID: "1")))
        _ = machine.tick(now: .seconds(60))
        #expect(machine.strikeCount == 0)
    }

    @Test func launchedHandlerThatNeverRegistersIsKilledWithAStrike() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.push(Self.push("1"), now: .zero, wallNowMilliseconds: Self.wall)
        machine.launched(now: .zero)
        #expect(machine.nextDeadline(now: .zero) == .seconds(10))
        let actions = machine.tick(now: .seconds(10))
        #expect(actions.contains(.kill(reason: "did not register within the launch deadline")))
        #expect(machine.strikeCount == 1)
    }

    @Test func backgroundPushOverrunIsKilled() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.push(Self.push("b", type: "background"), now: .zero, wallNowMilliseconds: Self.wall)
        machine.launched()
        _ = machine.registered(now: .zero)
        #expect(machine.tick(now: .seconds(29)).isEmpty)
        let actions = machine.tick(now: .seconds(30))
        #expect(actions.contains(.kill(reason: "background push not completed in time")))
    }

    @Test func throttledBackgroundHoldsOnlyTheNewest() {
        var rules = HandlerRules()
        rules.backgroundBurst = 1
        rules.backgroundPerHour = 3600  // one per second
        var machine = HandlerMachine(rules: rules)
        _ = machine.push(Self.push("1", type: "background"), now: .zero, wallNowMilliseconds: Self.wall)
        machine.launched()
        _ = machine.registered(now: .zero)
        _ = machine.complete(pushID: "1", result: "newData", now: .zero)
        _ = machine.push(Self.push("2", type: "background"), now: .zero, wallNowMilliseconds: Self.wall)
        let replaced = machine.push(Self.push("3", type: "background"), now: .zero, wallNowMilliseconds: Self.wall)
        #expect(replaced.contains(.ack(pushID: "2")))
        #expect(machine.held?.id == "3")
        #expect(machine.nextDeadline(now: .zero) == .seconds(1))
        let later = machine.tick(now: .seconds(1))
        #expect(later.contains(.deliver(Self.push("3", type: "background"), mustReport: false, deadlineSeconds: 30)))
    }

    @Test func userStoppedHoldsUntilStarted() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.userStop()
        let held = machine.push(Self.push("1", type: "background"), now: .zero, wallNowMilliseconds: Self.wall)
        #expect(!held.contains(.launch(reason: "backgroundPush")))
        #expect(machine.userStart(now: .zero) == [.launch(reason: "user")])
        machine.launched()
        #expect(
            machine.registered(now: .zero) == [
                .deliver(Self.push("1", type: "background"), mustReport: false, deadlineSeconds: 30)
            ])
    }

    @Test func backgroundTaskExpiryNoticeThenLeakKill() {
        var rules = HandlerRules()
        rules.taskBudget = .seconds(10)
        rules.taskExpiryNotice = .seconds(2)
        var machine = HandlerMachine(rules: rules)
        _ = machine.userStart(now: .zero)
        machine.launched()
        _ = machine.registered(now: .zero)
        let (id, _) = machine.beginTask(name: "upload", now: .zero)
        #expect(id == 1)
        #expect(machine.nextDeadline(now: .zero) == .seconds(8))
        #expect(machine.tick(now: .seconds(8)) == [.notify(.taskExpiring(id: 1, name: "upload", seconds: 2))])
        #expect(machine.nextDeadline(now: .seconds(8)) == .seconds(11))
        let actions = machine.tick(now: .seconds(11))
        #expect(actions.contains(.kill(reason: "background task never ended: upload")))
    }

    @Test func idleBackgroundSuspendsAndCoalescesReachability() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.userStart(now: .zero)
        machine.launched()
        _ = machine.registered(now: .zero)
        #expect(machine.tick(now: .seconds(1)) == [.suspend])
        #expect(machine.lifecycle == .suspended)
        #expect(machine.reachability(false).isEmpty)
        #expect(machine.reachability(true).isEmpty)
        #expect(machine.reachability(false).isEmpty)
        let resumed = machine.push(Self.push("v"), now: .seconds(2), wallNowMilliseconds: Self.wall)
        #expect(resumed.first == .resume)
        #expect(
            resumed.filter { if case .notify(.reachability) = $0 { true } else { false } } == [
                .notify(.reachability(false))
            ])
    }

    @Test func neverSuspendedWhileHoldingAudioAndIdleClockRestartsWhenItEnds() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.userStart(now: .zero)
        machine.launched()
        _ = machine.registered(now: .zero)
        machine.setHoldsAudio(true, now: Self.s(0.5))
        #expect(machine.tick(now: .seconds(60)).isEmpty)
        #expect(machine.nextDeadline(now: .seconds(60)) == nil)
        #expect(machine.lifecycle == .background)
        machine.setHoldsAudio(false, now: .seconds(60))
        // Idle from the moment the audio ended, not from registration.
        #expect(machine.nextDeadline(now: .seconds(60)) == .seconds(60) + HandlerRules().suspendAfter)
        #expect(machine.tick(now: .seconds(60) + HandlerRules().suspendAfter) == [.suspend])
        // An exit clears the hold.
        machine.setHoldsAudio(true, now: .seconds(70))
        _ = machine.exited(now: .seconds(71))
        #expect(!machine.holdsAudio)
    }

    @Test func neverSuspendedWithOpenWork() {
        var machine = HandlerMachine(rules: HandlerRules())
        _ = machine.push(Self.push("b", type: "background"), now: .zero, wallNowMilliseconds: Self.wall)
        machine.launched()
        _ = machine.registered(now: .zero)
        #expect(!machine.tick(now: .seconds(5)).contains(.suspend))
        _ = machine.complete(pushID: "b", result: "noData", now: .seconds(5))
        #expect(machine.tick(now: .seconds(6)).contains(.suspend))
    }

    /// One missed VoIP report at monotonic `at` (the handler registers and never reports).
    static func strike(_ machine: inout HandlerMachine, id: String, at: Duration) {
        _ = machine.push(Self.push(id), now: at, wallNowMilliseconds: Self.wall)
        machine.launched()
        _ = machine.registered(now: at)
        _ = machine.tick(now: at + .seconds(5))
        _ = machine.exited(now: at + .seconds(5))
    }

    @Test func strikeTimesRoundTripThroughTheStateStoreAndTheWindowKeepsRunning() throws {
        var rules = HandlerRules()
        rules.strikeWindow = .seconds(100)
        // First run: monotonic zero is wall time W; strikes at 5 s and 25 s.
        let firstEpoch = Self.wall
        var machine = HandlerMachine(rules: rules)
        Self.strike(&machine, id: "a", at: .zero)
        Self.strike(&machine, id: "b", at: .seconds(20))
        #expect(machine.strikeCount == 2)
        let persisted = machine.persisted(wallEpochMilliseconds: firstEpoch)
        #expect(persisted.strikes == 2)
        #expect(persisted.strikeTimes == [firstEpoch + 5000, firstEpoch + 25_000])

        // Through JSON, as the agent's state store keeps it (its file handling is RouseAgentTests' subject).
        var state = AgentState()
        state.handlers["h"] = persisted
        let loaded = try JSONDecoder().decode(AgentState.self, from: try JSONEncoder().encode(state))
        #expect(loaded == state)

        // Restart 50 s (wall) after the first epoch; the new monotonic clock starts again at zero.
        let secondEpoch = firstEpoch + 50_000
        var restored = HandlerMachine(rules: rules)
        restored.restore(try #require(loaded.handlers["h"]), now: .zero, wallEpochMilliseconds: secondEpoch)
        #expect(restored.strikeCount == 2)
        #expect(restored.persisted(wallEpochMilliseconds: secondEpoch) == persisted)
        // The first strike (wall W+5 s) leaves the window at W+105 s = 55 s on the new clock.
        #expect(restored.nextDeadline(now: .zero) == .seconds(55))
        _ = restored.tick(now: .seconds(55))
        #expect(restored.strikeCount == 2)
        _ = restored.tick(now: .milliseconds(55_001))
        #expect(restored.strikeCount == 1)
        #expect(restored.nextDeadline(now: .milliseconds(55_001)) == .seconds(75))
        _ = restored.tick(now: .milliseconds(75_001))
        #expect(restored.strikeCount == 0)

        // A restart after the whole window: nothing restored; state without times restarts the window.
        var late = HandlerMachine(rules: rules)
        late.restore(persisted, now: .zero, wallEpochMilliseconds: firstEpoch + 200_000)
        #expect(late.strikeCount == 0)
        var legacy = HandlerMachine(rules: rules)
        legacy.restore(
            PersistedHandler(strikes: 2, voipBlocked: false, userStopped: false), now: .seconds(7),
            wallEpochMilliseconds: secondEpoch)
        #expect(legacy.strikeCount == 2)
        #expect(legacy.nextDeadline(now: .seconds(7)) == .seconds(107))
    }
}
