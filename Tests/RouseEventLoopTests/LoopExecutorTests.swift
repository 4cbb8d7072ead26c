import RouseClock
import RouseEventLoop
import Synchronization
import Testing

/// The daemons' executor, driven through `Task(executorPreference:)` (installing it would take over the test process's
/// own executors): jobs and `Task.sleep` run on its loop, on its loop's clock.
@Suite("LoopExecutor", .timeLimit(.minutes(1)))
struct LoopExecutorTests {
    /// A task preferring the executor runs on the loop's thread, and so does what follows its `Task.sleep`.
    @Test func tasksAndTheirSleepsRunOnTheLoop() async throws {
        let loop = try EventLoop(name: "test-executor")
        loop.start()
        defer { loop.stopAndWait() }
        let executor = LoopExecutor(loop: loop)
        let places = try await Task(executorPreference: executor) { () async throws -> [Bool] in
            let before = loop.inLoop
            try await Task.sleep(for: .milliseconds(1))
            return [before, loop.inLoop]
        }.value
        #expect(places == [true, true])
    }

    /// Tasks enqueued one after the other start in that order (the loop's queue is FIFO).
    @Test func jobsRunInTheOrderEnqueued() async throws {
        let loop = try EventLoop(name: "test-exec-order")
        loop.start()
        defer { loop.stopAndWait() }
        let executor = LoopExecutor(loop: loop)
        let seen = Mutex<[Int]>([])
        var tasks: [Task<Void, Never>] = []
        for i in 0..<50 {
            tasks.append(Task(executorPreference: executor) { @Sendable in seen.withLock { $0.append(i) } })
        }
        for task in tasks { await task.value }
        #expect(seen.withLock { $0 } == Array(0..<50))
    }

    /// On a manual clock, a `Task.sleep` of an hour ends when the test advances the clock by an hour, not before,
    /// and without real time passing: the sleep is a timer on the loop, and the advance wakes the loop.
    @Test func aSleepEndsWhenTheManualClockPassesIt() async throws {
        let clock = ManualClock()
        let loop = try EventLoop(name: "test-exec-manual", clock: clock)
        loop.start()
        defer { loop.stopAndWait() }
        let executor = LoopExecutor(loop: loop)
        let woke = Atomic<Bool>(false)
        let sleeper = Task(executorPreference: executor) {
            try await Task.sleep(for: .seconds(3600))
            woke.store(true, ordering: .releasing)
        }
        try await waitForTimer(on: loop)
        clock.advance(by: .seconds(3599))
        await roundTrip(loop)
        await roundTrip(loop)
        let early = woke.load(ordering: .acquiring)
        #expect(!early)
        clock.advance(by: .seconds(1))
        try await sleeper.value
        let late = woke.load(ordering: .acquiring)
        #expect(late)
    }

    /// A sleeping task that is cancelled ends at once with `CancellationError`, without its timer firing.
    @Test func cancellingASleepingTaskEndsItAtOnce() async throws {
        let clock = ManualClock()
        let loop = try EventLoop(name: "test-exec-cancel", clock: clock)
        loop.start()
        defer { loop.stopAndWait() }
        let executor = LoopExecutor(loop: loop)
        let sleeper = Task(executorPreference: executor) { () async -> Bool in
            do {
                try await Task.sleep(for: .seconds(3600))
                return false
            } catch {
                return error is CancellationError && loop.inLoop
            }
        }
        try await waitForTimer(on: loop)
        sleeper.cancel()
        #expect(await sleeper.value)
    }

    /// `stop()` ends `run()` (the main thread's wait), whichever thread calls it, the loop's own included.
    @Test func stopFromTheLoopsThreadEndsRun() async throws {
        let loop = try EventLoop(name: "test-exec-stop")
        loop.start()
        defer { loop.stopAndWait() }
        let executor = LoopExecutor(loop: loop)
        loop.execute { executor.stop() }
        try executor.run()
    }

    /// Waits (by round trips, not time) until a timer is armed on `loop`.
    private func waitForTimer(on loop: EventLoop) async throws {
        for _ in 0..<100_000 {
            let armed = await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
                loop.execute { done.resume(returning: loop.timerCount) }
            }
            if armed > 0 { return }
            await Task.yield()
        }
        Issue.record("no timer was armed")
    }

    private func roundTrip(_ loop: EventLoop) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in loop.execute { done.resume() } }
    }
}
