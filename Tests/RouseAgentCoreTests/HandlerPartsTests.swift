import Testing

@testable import RouseAgentCore

/// The parts ``HandlerMachine`` delegates to, each owning its own state: the strike record, the background-push
/// token bucket and the background tasks' budget, on manual time.
@Suite("Handler rules' parts: strikes, the background-push bucket, background tasks")
struct HandlerPartsTests {
    static func s(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    @Test func theStrikeThatReachesTheLimitBlocksOnceAndClearingLiftsIt() {
        var record = StrikeRecord()
        let blocked = (1...4).map { record.strike(now: Self.s(Double($0)), limit: 3) }
        // The third blocks; blocked already, a fourth strike counts but is not "the one that blocked".
        #expect(blocked == [false, false, true, false])
        #expect(record.blocked)
        #expect(record.times.count == 4)
        #expect(record.clear() == 4)
        #expect(record.times.isEmpty && !record.blocked)
    }

    @Test func strikesOlderThanTheWindowExpire() {
        var record = StrikeRecord()
        _ = record.strike(now: Self.s(1), limit: 3)
        _ = record.strike(now: Self.s(5), limit: 3)
        record.expire(now: Self.s(11.5), window: Self.s(10))
        #expect(record.times == [Self.s(5)])
        // Expiry lifts no block: only registering again does.
        record.restore(times: [Self.s(9), Self.s(2)], blocked: true)
        #expect(record.times == [Self.s(2), Self.s(9)])
        record.expire(now: Self.s(100), window: Self.s(10))
        #expect(record.times.isEmpty && record.blocked)
    }

    @Test func theBucketRefillsContinuouslyUpToItsBurst() {
        var bucket = BackgroundPushBucket(burst: 2)
        #expect(bucket.available(now: .zero, burst: 2, perHour: 3600) == 2)
        bucket.take(now: .zero, burst: 2, perHour: 3600)
        bucket.take(now: .zero, burst: 2, perHour: 3600)
        #expect(bucket.available(now: .zero, burst: 2, perHour: 3600) == 0)
        // 3600 per hour: one a second.
        #expect(bucket.available(now: Self.s(0.5), burst: 2, perHour: 3600) == 0.5)
        #expect(bucket.available(now: Self.s(10), burst: 2, perHour: 3600) == 2)
    }

    @Test(arguments: [-5.0, 7.0, Double.nan])
    func aRestoredCountIsClampedToTheBucket(_ tokens: Double) {
        var bucket = BackgroundPushBucket(burst: 3)
        bucket.restore(tokens: tokens, now: Self.s(1), burst: 3)
        let available = bucket.available(now: Self.s(1), burst: 3, perHour: 1)
        #expect(available >= 0 && available <= 3)
    }

    static var taskRules: HandlerRules {
        var rules = HandlerRules()
        rules.taskBudget = .seconds(30)
        rules.taskExpiryNotice = .seconds(5)
        rules.taskGrace = .seconds(2)
        return rules
    }

    @Test func tasksGetOneExpiryNoticeThenAreOverrunAfterTheGrace() {
        var time = BackgroundTasks()
        time.enterBackground(now: .zero)
        #expect(time.due(now: Self.s(29), rules: Self.taskRules).expiring.isEmpty)  // no task: nothing due
        let first = time.begin(name: "upload")
        let second = time.begin(name: "sync")
        #expect(second == first + 1)
        #expect(time.nextDeadline(rules: Self.taskRules) == Self.s(25))
        let notice = time.due(now: Self.s(26), rules: Self.taskRules)
        #expect(
            notice.expiring == [
                .taskExpiring(id: first, name: "upload", seconds: 4),
                .taskExpiring(id: second, name: "sync", seconds: 4),
            ])
        #expect(notice.overrun == nil)
        // Once per budget; then the grace's end.
        #expect(time.due(now: Self.s(27), rules: Self.taskRules).expiring.isEmpty)
        #expect(time.nextDeadline(rules: Self.taskRules) == Self.s(32))
        time.end(id: first)
        #expect(time.due(now: Self.s(32), rules: Self.taskRules).overrun == "sync")
        #expect(time.remaining(now: Self.s(40), budget: Self.taskRules.taskBudget) == 0)
    }

    @Test func theForegroundStopsTheBudgetAndARestoredOneGoesOn() {
        var time = BackgroundTasks()
        time.enterBackground(now: .zero)
        _ = time.begin(name: "upload")
        time.enterForeground()
        #expect(time.remaining(now: Self.s(10), budget: .seconds(30)) == nil)
        #expect(time.nextDeadline(rules: Self.taskRules) == nil)
        // A re-attached process: its tasks and the 12 s it had used, applied when it registers into the background.
        var restored = BackgroundTasks()
        restored.restore(tasks: [4: "upload"], used: .seconds(12))
        restored.enterBackground(now: Self.s(100))
        restored.registered(now: Self.s(100), enteredBackground: true)
        #expect(restored.remaining(now: Self.s(100), budget: .seconds(30)) == 18)
        #expect(restored.begin(name: "next") == 5)
        restored.reset()
        #expect(restored.open.isEmpty && restored.since == nil)
    }
}
