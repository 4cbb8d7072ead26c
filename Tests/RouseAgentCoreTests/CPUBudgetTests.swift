import RouseAgentCore
import Testing

/// The background CPU budget's decision (issue 29, throttling) on explicit times: over the budget in a window →
/// throttled at the budget; at the quota again in the next window while throttled → terminated.
@Suite("Background CPU budget: throttled, then terminated")
struct CPUBudgetTests {
    let budget = CPUBudget(percent: 10, window: .seconds(2))

    @Test func aHandlerOverItsBudgetIsThrottledThenTerminated() {
        var meter = CPUBudgetMeter(budget: budget, now: .seconds(100), usage: 5_000_000)
        #expect(meter.windowEnd == .seconds(102))
        // A whole core for the 2 s window: 2 s used, 0.2 s allowed.
        #expect(
            meter.check(now: .seconds(102), usage: 7_000_000)
                == .throttle(quotaMicroseconds: 10_000, periodMicroseconds: 100_000, usedMicroseconds: 2_000_000))
        #expect(meter.throttled && meter.windowEnd == .seconds(104))
        // Held at its quota (0.2 s in 2 s): still pinned at the budget → terminated.
        #expect(meter.check(now: .seconds(104), usage: 7_195_000) == .terminate(usedMicroseconds: 195_000))
    }

    @Test func aHandlerUnderItsBudgetIsLeftAlone() {
        var meter = CPUBudgetMeter(budget: budget, now: .zero, usage: 0)
        #expect(meter.check(now: .seconds(2), usage: 150_000) == .within)
        #expect(meter.check(now: .seconds(4), usage: 300_000) == .within)
        #expect(!meter.throttled && meter.windowEnd == .seconds(6))
    }

    @Test func aThrottledHandlerBelowItsQuotaIsNotTerminated() {
        var meter = CPUBudgetMeter(budget: budget, now: .zero, usage: 0)
        #expect(meter.check(now: .seconds(2), usage: 1_000_000) != .within)
        #expect(meter.check(now: .seconds(4), usage: 1_050_000) == .within)
        #expect(meter.throttled)
    }

    @Test func aCheckBeforeTheWindowEndsActsOnlyOnAWholeBudgetSpent() {
        var meter = CPUBudgetMeter(budget: budget, now: .zero, usage: 0)
        // At the rules' deadline, 1 s in: 0.15 s is within the window's 0.2 s; the window goes on.
        #expect(meter.check(now: .seconds(1), usage: 150_000) == .within)
        #expect(meter.windowEnd == .seconds(2))
        // 0.5 s in 1.5 s: the window's whole budget is spent already.
        #expect(meter.check(now: .milliseconds(1_500), usage: 500_000) != .within)
        #expect(meter.windowEnd == .milliseconds(3_500))
    }

    @Test func aLateCheckJudgesTheWindowOnItsLength() {
        var meter = CPUBudgetMeter(budget: budget, now: .zero, usage: 0)
        // The timer fired at 4 s instead of 2 s: 0.3 s in 4 s is 7.5 %.
        #expect(meter.check(now: .seconds(4), usage: 300_000) == .within)
    }

    @Test func noBudgetNeverActs() {
        var meter = CPUBudgetMeter(budget: CPUBudget(percent: 0, window: .seconds(2)), now: .zero, usage: 0)
        #expect(meter.check(now: .seconds(2), usage: 2_000_000) == .within)
        #expect(CPUBudget(percent: 250).quotaMicroseconds == 250_000)
        #expect(CPUBudget(percent: 0).quotaMicroseconds == 1_000)
    }
}
