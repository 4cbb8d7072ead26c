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

    /// Connection churn: each connection arms an idle timer of an hour and cancels it when it closes. The heap held
    /// a 16-byte entry for each of them until its hour passed; now cancelled entries are dropped once they are half.
    @Test func cancelledTimersDoNotPileUp() async throws {
        let loop = try EventLoop(name: "test-churn")
        loop.start()
        defer { loop.stopAndWait() }
        let entries = await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
            loop.execute {
                loop.schedule(after: .seconds(7200)) {}
                for _ in 0..<10_000 {
                    let id = loop.schedule(after: .seconds(3600)) {}
                    loop.cancelTimer(id)
                }
                done.resume(returning: loop.timerEntries)
            }
        }
        #expect(entries <= 130, "\(entries) timer entries for 1 live timer")
    }

    /// After compactions the live timers still fire in deadline order, each once.
    @Test func timersFireInOrderAcrossCompactions() async throws {
        let clock = ManualClock()
        let loop = try EventLoop(name: "test-compact-order", clock: clock)
        loop.start()
        defer { loop.stopAndWait() }
        let fired = Mutex<[Int]>([])
        var generator = SystemRandomNumberGenerator()
        let delays = (0..<500).map { _ in Int.random(in: 1...10_000, using: &generator) }
        await roundTrip(loop) {
            for (index, delay) in delays.enumerated() {
                let id = loop.schedule(after: .milliseconds(delay)) { fired.withLock { $0.append(delay) } }
                if index % 3 != 0 { loop.cancelTimer(id) }
            }
        }
        clock.advance(by: .seconds(11))
        await roundTrip(loop) {}
        await roundTrip(loop) {}
        let expected = delays.enumerated().filter { $0.offset % 3 == 0 }.map(\.element).sorted()
        #expect(fired.withLock { $0 } == expected)
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
