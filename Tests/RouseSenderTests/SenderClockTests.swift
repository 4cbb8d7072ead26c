import RouseAPNs
import RouseClock
import RouseMockAPNs
import RouseSender
import Synchronization
import Testing

private struct TickerError: Error, CustomStringConvertible {
    var description: String { "the sender's ticker never slept on its clock again" }
}

@Suite("The sender on a manual clock", .timeLimit(.minutes(1)))
struct SenderClockTests {
    typealias F = MockFixture

    /// Until the sender's ticker sleeps on `clock` again: after an advance, the tick it woke for has run (and called
    /// the completions it finished). A wait for an event, bounded in real time.
    private func tickerAsleep(_ clock: ManualClock) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while clock.sleeperCount != 1 {
            guard ContinuousClock.now < deadline else { throw TickerError() }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test("a push's deadline and latency run on the sender's clock: no outcome before it, a deadline failure after")
    func deadlineOnTheSendersClock() async throws {
        let blackhole = MockFaultRule(id: "b", match: MockFaultMatch(nth: 1), action: .blackhole, times: 1)
        let fixture = try F { $0.faults = [blackhole] }
        // Its wall clock at the real time: the mock checks the provider token's `iat` against its own.
        let clock = ManualClock(wallMilliseconds: APNsTime.now().milliseconds)
        let sender = try fixture.sender(clock: clock)
        try await tickerAsleep(clock)
        let outcome = Mutex<PushResult?>(nil)
        sender.send(F.voip(F.token(1)), deadline: .milliseconds(300)) { result in outcome.withLock { $0 = result } }
        // The ticker (every 100 ms of the clock) wakes at 299 ms: the push is not due yet.
        clock.advance(by: .milliseconds(299))
        try await tickerAsleep(clock)
        #expect(outcome.withLock { $0 } == nil, "no outcome before the deadline")
        // Its next tick, at 399 ms, is past the deadline. With nothing left to time the ticker may then park until
        // the next push instead of sleeping on the clock again: wait for the outcome itself (bounded in real time).
        clock.advance(by: .milliseconds(100))
        let deadline = ContinuousClock.now + .seconds(10)
        while outcome.withLock({ $0 }) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        let result = try #require(outcome.withLock { $0 })
        guard case .failed(let error, _) = result.outcome else {
            Issue.record("expected a deadline failure, got \(result.outcome)")
            return
        }
        #expect(error.isKind(.deadline("")), "\(error)")
        #expect(result.latency == .milliseconds(399), "latency measured on the sender's clock")
        await sender.shutdown()
        await fixture.shutdown()
    }
}
