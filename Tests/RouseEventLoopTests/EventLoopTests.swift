import RouseClock
import RouseEventLoop
import Synchronization
import Testing

@Suite("EventLoop timers", .timeLimit(.minutes(1)))
struct EventLoopTests {
    /// A deadline already past (a negative delay, -0.5 s is 0 s and -5e17 as) runs at once instead of trapping.
    @Test(arguments: [Duration.milliseconds(-500), .seconds(-2), .zero])
    func aDelayInThePastRunsAtOnce(_ delay: Duration) async throws {
        let loop = try EventLoop(name: "test-negative-delay")
        loop.start()
        defer { loop.stopAndWait() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { loop.schedule(after: delay) { done.resume() } }
        }
    }

    /// On a manual clock a timer fires when the clock is advanced past it, and not before: the loop, asleep in
    /// `epoll_wait` until an hour from now, is woken by the advance.
    @Test func aTimerOnAManualClockFiresWhenTheClockPassesIt() async throws {
        let clock = ManualClock()
        let loop = try EventLoop(name: "test-manual", clock: clock)
        loop.start()
        defer { loop.stopAndWait() }
        let fired = Atomic<Int>(0)
        let waiter = Mutex<CheckedContinuation<Void, Never>?>(nil)
        await roundTrip(loop) {
            loop.schedule(after: .seconds(3600)) {
                fired.add(1, ordering: .relaxed)
                waiter.withLock { $0.take() }?.resume()
            }
        }
        clock.advance(by: .seconds(3599))
        // Two round trips: the second ends after the loop's pass that saw the advance has looked at its timers.
        await roundTrip(loop) {}
        await roundTrip(loop) {}
        #expect(fired.load(ordering: .relaxed) == 0)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiter.withLock { $0 = continuation }
            clock.advance(by: .seconds(1))
        }
        #expect(fired.load(ordering: .relaxed) == 1)
    }

    private func roundTrip(_ loop: EventLoop, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                body()
                done.resume()
            }
        }
    }
}
