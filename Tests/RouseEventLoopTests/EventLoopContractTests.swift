import Dispatch
import Glibc
import RouseClock
import RouseEventLoop
import RouseSystem
import Synchronization
import Testing

/// The event loop's contract: what runs where, in which order, and that nothing sent to it is lost.
@Suite("EventLoop contract", .timeLimit(.minutes(1)))
struct EventLoopContractTests {
    /// Work handed over with `execute` runs on the loop's thread, in the order it was handed over.
    @Test func executeRunsInOrderOnTheLoopThread() async throws {
        let loop = try EventLoop(name: "test-order")
        loop.start()
        defer { loop.stopAndWait() }
        let seen = Mutex<[Int]>([])
        let offLoop = Atomic<Int>(0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for i in 0..<1000 {
                loop.execute {
                    if !loop.inLoop { offLoop.add(1, ordering: .relaxed) }
                    seen.withLock { $0.append(i) }
                    if i == 999 { done.resume() }
                }
            }
        }
        #expect(seen.withLock { $0 } == Array(0..<1000))
        #expect(offLoop.load(ordering: .relaxed) == 0)
    }

    /// Timers fire by deadline, ties in the order they were scheduled, when a manual clock passes them; a cancelled
    /// one never fires.
    @Test func timersFireByDeadlineAndCancelledOnesNever() async throws {
        let clock = ManualClock()
        let loop = try EventLoop(name: "test-timers", clock: clock)
        loop.start()
        defer { loop.stopAndWait() }
        let fired = Mutex<[String]>([])
        let last = Mutex<CheckedContinuation<Void, Never>?>(nil)
        await roundTrip(loop) {
            func record(_ name: String) { fired.withLock { $0.append(name) } }
            loop.schedule(after: .seconds(3)) {
                record("3s")
                last.withLock { $0.take() }?.resume()
            }
            loop.schedule(after: .seconds(1)) { record("1s-a") }
            let cancelled = loop.schedule(after: .seconds(2)) { record("cancelled") }
            loop.schedule(after: .seconds(1)) { record("1s-b") }
            loop.schedule(after: .seconds(2)) { record("2s") }
            loop.cancelTimer(cancelled)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            last.withLock { $0 = continuation }
            clock.advance(by: .seconds(5))
        }
        #expect(fired.withLock { $0 } == ["1s-a", "1s-b", "2s", "3s"])
    }

    /// No lost wake-up: jobs handed over from several threads at once while the loop goes to sleep and wakes all run
    /// (an `execute` that finds the queue non-empty does not wake the loop, so the loop must drain what it finds).
    @Test func noJobHandedOverFromOtherThreadsIsLost() async throws {
        let loop = try EventLoop(name: "test-wakeups")
        loop.start()
        defer { loop.stopAndWait() }
        let threads = 4
        let perThread = 5000
        let ran = Atomic<Int>(0)
        let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            done.withLock { $0 = continuation }
            for t in 0..<threads {
                Sys.detachedThread(name: "test-sender-\(t)") {
                    for _ in 0..<perThread {
                        loop.execute {
                            if ran.add(1, ordering: .relaxed).newValue == threads * perThread {
                                done.withLock { $0.take() }?.resume()
                            }
                        }
                    }
                }
            }
        }
        #expect(ran.load(ordering: .relaxed) == threads * perThread)
    }

    /// A loop stopped from its own thread (a callback that ends its loop) returns instead of waiting for itself, the
    /// thread ends, and a later stop from elsewhere returns too.
    @Test func stopFromTheLoopsOwnThreadReturns() async throws {
        let loop = try EventLoop(name: "test-selfstop")
        loop.start()
        let returned = Atomic<Bool>(false)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                loop.stopAndWait()
                returned.store(true, ordering: .relaxed)
                done.resume()
            }
        }
        let didReturn = returned.load(ordering: .relaxed)
        #expect(didReturn)
        loop.stopAndWait()
        #expect(!loop.inLoop)
    }

    /// A loop-confined call from another thread while the loop runs traps (debug builds): the contract is checked,
    /// not only written down.
    @Test func aLoopConfinedCallFromAnotherThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = try EventLoop(name: "test-confined")
            loop.start()
            // Wait until the loop's thread runs (a round trip), then break the rule from this thread.
            let ran = DispatchSemaphore(value: 0)
            loop.execute { ran.signal() }
            ran.wait()
            loop.schedule(after: .seconds(1)) {}
        }
    }

    /// With the stall detector on (`ROUSE_LOOP_STALL_LIMIT_MS`, as the test command runs every test), a callback that
    /// blocks the loop past the limit ends the process with the loop's name.
    @Test func aCallbackThatHoldsTheLoopPastTheLimitFails() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            setenv("ROUSE_LOOP_STALL_LIMIT_MS", "50", 1)
            let loop = try EventLoop(name: "test-stall")
            loop.start()
            loop.execute { Sys.sleep(seconds: 0.3) }
            loop.execute {}
            // The detector ends the process; if it did not, the stop returns and the exit test fails.
            Sys.sleep(seconds: 2)
            loop.stopAndWait()
        }
        .map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("event loop test-stall"))
        }
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
