import Testing

@testable import RouseAgentCore

/// The parts ``HandlerMachine`` delegates to, each owning its own state: the strike record and the background-push
/// token bucket, on manual time.
@Suite("Handler rules' parts: strikes and the background-push bucket")
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
}
