import Dispatch
import RouseClock
import RouseEventLoop
import RouseSystem
import Synchronization
import Testing

/// The timers' side of the loop's contract on a manual clock: cancellation from other callbacks, and the manual clock's
/// wake-up racing the loop on its way to sleep.
@Suite("EventLoop timer contract", .timeLimit(.minutes(1)))
struct EventLoopTimerContractTests {
    /// A timer cancelled by another timer that came due in the same pass (a request deadline that closes the
    /// connection and cancels its idle timer, both due at once) does not run; one cancelled from a job handed over
    /// with `execute` does not either, and the ones nobody cancelled run in deadline order.
    @Test func aTimerCancelledFromAnotherCallbackNeverRuns() async throws {
        let clock = ManualClock()
        let loop = try EventLoop(name: "test-cancel-cb", clock: clock)
        loop.start()
        defer { loop.stopAndWait() }
        let fired = Mutex<[String]>([])
        let last = DispatchSemaphore(value: 0)
        let later = Mutex<UInt64>(0)
        await onLoop(loop) {
            func record(_ name: String) { fired.withLock { $0.append(name) } }
            let victim = Mutex<UInt64>(0)
            loop.schedule(after: .seconds(1)) {
                record("canceller")
                loop.cancelTimer(victim.withLock { $0 })
            }
            let id = loop.schedule(after: .seconds(1)) { record("victim, due in the same pass") }
            victim.withLock { $0 = id }
            loop.schedule(after: .seconds(1)) { record("bystander") }
            let laterID = loop.schedule(after: .seconds(2)) { record("cancelled by execute") }
            later.withLock { $0 = laterID }
            loop.schedule(after: .seconds(3)) {
                record("last")
                last.signal()
            }
        }
        clock.advance(by: .seconds(1))
        await onLoop(loop) {}
        await onLoop(loop) { loop.cancelTimer(later.withLock { $0 }) }
        clock.advance(by: .seconds(2))
        #expect(last.wait(timeout: .now() + 10) == .success)
        #expect(fired.withLock { $0 } == ["canceller", "bystander", "last"])
        await onLoop(loop) { #expect(loop.timerCount == 0) }
    }

    /// A timer that re-arms itself with no delay runs once per pass, not in a loop inside one pass: the loop goes on
    /// serving its other work in between.
    @Test func aTimerArmedByATimerWaitsForTheNextPass() async throws {
        let loop = try EventLoop(name: "test-rearm")
        loop.start()
        defer { loop.stopAndWait() }
        let runs = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let executed = DispatchSemaphore(value: 0)
        await onLoop(loop) {
            func rearm() {
                runs.add(1, ordering: .relaxed)
                if !stop.load(ordering: .relaxed) { loop.schedule(after: .zero) { rearm() } }
            }
            loop.schedule(after: .zero) { rearm() }
        }
        // A job handed over while the timer keeps re-arming itself still runs.
        loop.execute {
            stop.store(true, ordering: .relaxed)
            executed.signal()
        }
        #expect(executed.wait(timeout: .now() + 10) == .success, "the self-arming timer starved the loop")
        #expect(runs.load(ordering: .relaxed) >= 1)
    }

    /// No lost wake-up: the manual clock is advanced from the test's thread while the loop is on its way to sleep
    /// (it has just armed a timer an hour away and is computing its `epoll_wait` timeout from the old time). Each time
    /// the timer fires at once; a lost wake-up would leave the loop asleep for the hour and the wait below time out.
    /// Repeated, so that the advance lands in every part of that window.
    @Test func anAdvanceRacingTheLoopIntoSleepIsNotLost() async throws {
        let clock = ManualClock()
        let loop = try EventLoop(name: "test-adv-race", clock: clock)
        loop.start()
        defer { loop.stopAndWait() }
        let armed = DispatchSemaphore(value: 0)
        let fired = DispatchSemaphore(value: 0)
        var lost = 0
        for _ in 0..<500 {
            loop.execute {
                loop.schedule(after: .seconds(3600)) { fired.signal() }
                armed.signal()
            }
            armed.wait()
            clock.advance(by: .seconds(3600))
            if fired.wait(timeout: .now() + 10) != .success {
                lost += 1
                break
            }
        }
        #expect(lost == 0, "a manual-clock advance did not wake the loop")
    }

    private func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                body()
                done.resume()
            }
        }
    }
}
