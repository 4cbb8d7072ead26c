import RouseAgent
import RouseClock
import Synchronization
import Testing

/// The agent's one timer shape on a manual clock: it keeps an armed sleep that is due no later than a new deadline,
/// re-arms for an earlier one, and a cancelled or replaced sleep never fires — not even one already on its way.
@Suite("AgentTimer on a manual clock")
struct AgentTimerTests {
    /// Counts firings (the timer's owner would run a step on the agent) and keeps the last one's generation.
    final class Firings: Sendable {
        private let state = Mutex<(count: Int, generation: UInt64?)>((0, nil))
        var value: Int { state.withLock { $0.count } }
        var generation: UInt64? { state.withLock { $0.generation } }
        func fire(_ generation: UInt64) { state.withLock { $0 = ($0.count + 1, generation) } }
    }

    /// Advances `clock` and waits for the timer's sleep that came due (if any) to have run.
    static func advance(_ clock: ManualClock, by duration: Duration, _ timer: AgentTimer) async {
        clock.advance(by: duration)
        if let due = timer.due { await due.value }
    }

    @Test func aLaterDeadlineKeepsTheArmedSleep() async throws {
        let clock = ManualClock()
        let timer = AgentTimer(clock: clock)
        let firings = Firings()
        timer.arm(at: clock.deadline(after: .seconds(1))) { firings.fire($0) }
        timer.arm(at: clock.deadline(after: .seconds(2))) { firings.fire($0) }
        #expect(timer.deadline == clock.deadline(after: .seconds(1)))
        await Self.advance(clock, by: .milliseconds(999), timer)
        #expect(firings.value == 0)
        await Self.advance(clock, by: .milliseconds(1), timer)
        #expect(firings.value == 1)
        // Nothing else was armed: a second more fires nothing.
        #expect(timer.fired(try #require(firings.generation)))
        await Self.advance(clock, by: .seconds(1), timer)
        #expect(firings.value == 1)
    }

    @Test func anEarlierDeadlineReplacesTheArmedSleep() async throws {
        let clock = ManualClock()
        let timer = AgentTimer(clock: clock)
        let later = Firings()
        let earlier = Firings()
        timer.arm(at: clock.deadline(after: .seconds(2))) { later.fire($0) }
        timer.arm(at: clock.deadline(after: .seconds(1))) { earlier.fire($0) }
        #expect(timer.deadline == clock.deadline(after: .seconds(1)))
        await Self.advance(clock, by: .seconds(1), timer)
        #expect(timer.fired(try #require(earlier.generation)))
        await Self.advance(clock, by: .seconds(5), timer)
        #expect(earlier.value == 1)
        #expect(later.value == 0)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aCancelledTimerDoesNotFire() async {
        let clock = ManualClock()
        let timer = AgentTimer(clock: clock)
        let firings = Firings()
        timer.arm(at: clock.deadline(after: .seconds(1))) { firings.fire($0) }
        timer.cancel()
        #expect(timer.deadline == nil)
        await Self.advance(clock, by: .seconds(10), timer)
        #expect(firings.value == 0)
    }

    /// The owner of a timer, as the agent is: its step runs on its isolation, reached by a hop from the sleeping task.
    actor Owner {
        let timer: AgentTimer
        private(set) var steps = 0
        /// Firings that reached the owner, stale or not.
        private(set) var arrivals = 0
        init(clock: ManualClock) { timer = AgentTimer(clock: clock) }

        func arm(at deadline: RouseInstant, gate: Gate) {
            timer.arm(at: deadline) { generation in
                await gate.pass()
                await self.step(generation)
            }
        }
        func cancel() { timer.cancel() }
        var deadline: RouseInstant? { timer.deadline }
        private func step(_ generation: UInt64) {
            arrivals += 1
            guard timer.fired(generation) else { return }
            steps += 1
        }
    }

    /// Holds a firing on its way to the owner until opened, as a busy agent would.
    actor Gate {
        private var waiting: CheckedContinuation<Void, Never>?
        private var open = false
        private(set) var arrived = false
        func pass() async {
            arrived = true
            if open { return }
            await withCheckedContinuation { waiting = $0 }
        }
        func release() {
            open = true
            waiting?.resume()
            waiting = nil
        }
    }

    @Test func aFiringOnItsWayWhenTheTimerIsReArmedOrCancelledDoesNothing() async {
        let clock = ManualClock()
        let owner = Owner(clock: clock)
        let gate = Gate()
        await owner.arm(at: clock.deadline(after: .seconds(1)), gate: gate)
        while clock.sleeperCount < 1 { await Task.yield() }
        clock.advance(by: .seconds(1))
        while !(await gate.arrived) { await Task.yield() }
        // The first firing waits at the gate; the owner meanwhile cancels and arms for 5 s later.
        await owner.cancel()
        await owner.arm(at: clock.deadline(after: .seconds(5)), gate: Gate())
        await gate.release()
        while clock.sleeperCount < 1 { await Task.yield() }
        // The stale firing reaches the owner: it must neither step nor forget the new arming.
        while await owner.arrivals < 1 { await Task.yield() }
        #expect(await owner.steps == 0)
        #expect(await owner.deadline == clock.deadline(after: .seconds(5)))
        // Cancelled, the new arming does not fire either.
        await owner.cancel()
        clock.advance(by: .seconds(5))
        for _ in 0..<100 { await Task.yield() }
        #expect(await owner.steps == 0)
    }
}
