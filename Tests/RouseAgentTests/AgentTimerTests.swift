import RouseAgent
import RouseClock
import Synchronization
import Testing

/// The agent's one timer shape on a manual clock: it keeps an armed sleep that is due no later than a new deadline,
/// re-arms for an earlier one, and a cancelled or replaced sleep never fires.
@Suite("AgentTimer on a manual clock")
struct AgentTimerTests {
    /// Counts firings (the timer's owner would run a step on the agent).
    final class Firings: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func fire() { count.withLock { $0 += 1 } }
    }

    /// Advances `clock` and waits for the timer's sleep that came due (if any) to have run.
    static func advance(_ clock: ManualClock, by duration: Duration, _ timer: AgentTimer) async {
        clock.advance(by: duration)
        if let due = timer.due { await due.value }
    }

    @Test func aLaterDeadlineKeepsTheArmedSleep() async {
        let clock = ManualClock()
        let timer = AgentTimer(clock: clock)
        let firings = Firings()
        timer.arm(at: clock.deadline(after: .seconds(1))) { firings.fire() }
        timer.arm(at: clock.deadline(after: .seconds(2))) { firings.fire() }
        #expect(timer.deadline == clock.deadline(after: .seconds(1)))
        await Self.advance(clock, by: .milliseconds(999), timer)
        #expect(firings.value == 0)
        await Self.advance(clock, by: .milliseconds(1), timer)
        #expect(firings.value == 1)
        // Nothing else was armed: a second more fires nothing.
        timer.fired()
        await Self.advance(clock, by: .seconds(1), timer)
        #expect(firings.value == 1)
    }

    @Test func anEarlierDeadlineReplacesTheArmedSleep() async {
        let clock = ManualClock()
        let timer = AgentTimer(clock: clock)
        let later = Firings()
        let earlier = Firings()
        timer.arm(at: clock.deadline(after: .seconds(2))) { later.fire() }
        timer.arm(at: clock.deadline(after: .seconds(1))) { earlier.fire() }
        #expect(timer.deadline == clock.deadline(after: .seconds(1)))
        await Self.advance(clock, by: .seconds(1), timer)
        timer.fired()
        await Self.advance(clock, by: .seconds(5), timer)
        #expect(earlier.value == 1)
        #expect(later.value == 0)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aCancelledTimerDoesNotFire() async {
        let clock = ManualClock()
        let timer = AgentTimer(clock: clock)
        let firings = Firings()
        timer.arm(at: clock.deadline(after: .seconds(1))) { firings.fire() }
        timer.cancel()
        #expect(timer.deadline == nil)
        await Self.advance(clock, by: .seconds(10), timer)
        #expect(firings.value == 0)
    }
}
