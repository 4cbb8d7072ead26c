import RouseAgentCore
import Testing

/// Background-fetch scheduling on a manual clock: times are plain `Duration`s the test advances.
@Suite("FetchScheduler: interval, coalescing, adaptivity, offline")
struct FetchSchedulerTests {
    static let minute = Duration.seconds(60)

    @Test func neverBeforeTheMinimumIntervalNorWhileOffline() {
        var scheduler = FetchScheduler(minimum: Self.minute * 15, now: .zero)
        // Preferred: twice the minimum after start; a wake-up may fetch from 22.5 min; nothing before 15 min.
        #expect(scheduler.preferred == Self.minute * 30)
        #expect(!scheduler.due(now: Self.minute * 14, networkUsable: true, wakeUp: true))
        #expect(!scheduler.due(now: Self.minute * 29, networkUsable: true, wakeUp: false))
        #expect(scheduler.due(now: Self.minute * 30, networkUsable: true, wakeUp: false))
        // Offline: no fetch and no timer, however late.
        #expect(!scheduler.due(now: Self.minute * 300, networkUsable: false, wakeUp: true))
        #expect(scheduler.nextTimer(networkUsable: false) == nil)
        scheduler.started(now: Self.minute * 31)
        #expect(!scheduler.due(now: Self.minute * 200, networkUsable: true, wakeUp: true))  // one at a time
        scheduler.ended(.noData, bytes: 0, now: Self.minute * 31 + .seconds(2))
        #expect(scheduler.allowed == Self.minute * 46)
        #expect(!scheduler.due(now: Self.minute * 45, networkUsable: true, wakeUp: true))
    }

    @Test func anotherWakeUpLetsAHandlerFetchEarlyInTheSecondHalfOfItsWait() {
        let scheduler = FetchScheduler(minimum: Self.minute * 10, now: .zero)
        // allowed 10 min, preferred 20 min, coalescible 15 min.
        #expect(scheduler.coalescible == Self.minute * 15)
        #expect(!scheduler.due(now: Self.minute * 14, networkUsable: true, wakeUp: true))
        #expect(scheduler.due(now: Self.minute * 15, networkUsable: true, wakeUp: true))
        #expect(!scheduler.due(now: Self.minute * 15, networkUsable: true, wakeUp: false))
    }

    @Test(arguments: [
        (FetchScheduler.Outcome.newData, Int64(50_000), Duration.seconds(3), 1.0),  // fast and honest: halved
        (.newData, 50_000, .seconds(25), 2.0),  // slow newData: unchanged
        (.newData, 0, .seconds(3), 8.0),  // claims data it did not fetch: ×4
        (.noData, 0, .seconds(1), 2.5),
        (.failed, 900, .seconds(2), 4.0),
        (.timedOut, 0, .seconds(30), 8.0),
    ])
    func theFactorAdaptsToTheHandlersHistory(
        outcome: FetchScheduler.Outcome, bytes: Int64, took: Duration, factor: Double
    ) {
        var scheduler = FetchScheduler(minimum: Self.minute, now: .zero)
        scheduler.started(now: Self.minute * 2)
        #expect(scheduler.ended(outcome, bytes: bytes, now: Self.minute * 2 + took) == factor)
        #expect(scheduler.preferred == Self.minute * 2 + Self.minute * factor)
        #expect(scheduler.history.last?.outcome == outcome)
    }

    @Test func anHonestFastHandlerIsWokenMoreOftenThanASlowDishonestOne() {
        var honest = FetchScheduler(minimum: Self.minute, now: .zero)
        var dishonest = FetchScheduler(minimum: Self.minute, now: .zero)
        var now = Duration.zero
        var honestFetches = 0
        var dishonestFetches = 0
        // Six hours, looked at every minute (the agent's timer would look at exactly the preferred times).
        while now < Self.minute * 360 {
            now += Self.minute
            if honest.due(now: now, networkUsable: true, wakeUp: false) {
                honest.started(now: now)
                honest.ended(.newData, bytes: 10_000, now: now + .seconds(2))
                honestFetches += 1
            }
            if dishonest.due(now: now, networkUsable: true, wakeUp: false) {
                dishonest.started(now: now)
                dishonest.ended(.newData, bytes: 0, now: now + .seconds(2))
                dishonestFetches += 1
            }
        }
        #expect(honest.factor == 1)
        #expect(dishonest.factor == FetchScheduler.maxFactor)
        #expect(honestFetches > 300)
        #expect(dishonestFetches < 30)
        #expect(honest.history.count == FetchScheduler.historyLength)
    }
}
