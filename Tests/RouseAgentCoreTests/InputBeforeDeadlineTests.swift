import RouseAgentCore
import Testing

/// A due deadline waits for the handler's input that is on its way (`InputBeforeDeadline`), for at most its grace,
/// rechecked every few milliseconds; a new deadline starts a grace of its own.
@Suite("Deadlines wait for input written before them")
struct InputBeforeDeadlineTests {
    /// One look of the rules' timer (`#expect` cannot take a mutating call).
    func look(_ hold: inout InputBeforeDeadline, deadline: Duration?, inputWaiting: Bool, now: Duration) -> Bool {
        hold.holds(deadline: deadline, inputWaiting: inputWaiting, now: now)
    }

    @Test func aDueDeadlineWaitsForInputUntilItsGraceIsSpent() {
        var hold = InputBeforeDeadline()
        // Not due, or nothing on its way: no wait.
        #expect(!look(&hold, deadline: .seconds(11), inputWaiting: true, now: .seconds(10)))
        #expect(!look(&hold, deadline: .seconds(10), inputWaiting: false, now: .seconds(10)))
        #expect(!look(&hold, deadline: nil, inputWaiting: true, now: .seconds(10)))
        #expect(hold.nextDeadline(.seconds(10), now: .seconds(10)) == .seconds(10))

        // Due with input on its way: the rules wait, and look again in 20 ms.
        #expect(look(&hold, deadline: .seconds(10), inputWaiting: true, now: .seconds(11)))
        #expect(hold.nextDeadline(.seconds(10), now: .seconds(11)) == .seconds(11) + InputBeforeDeadline.recheck)
        #expect(look(&hold, deadline: .seconds(10), inputWaiting: true, now: .milliseconds(12_500)))
        // The last look is at the grace's end, not past it; there the deadline is enforced however much is written.
        #expect(hold.nextDeadline(.seconds(10), now: .milliseconds(12_990)) == .seconds(13))
        #expect(!look(&hold, deadline: .seconds(10), inputWaiting: true, now: .seconds(13)))
        #expect(hold.held == nil)
    }

    @Test func eachDeadlineHasAGraceOfItsOwn() {
        var hold = InputBeforeDeadline()
        #expect(look(&hold, deadline: .seconds(10), inputWaiting: true, now: .seconds(10)))
        // The input was the answer: the next look finds another deadline due, much later; it waits afresh.
        #expect(look(&hold, deadline: .seconds(40), inputWaiting: true, now: .seconds(41)))
        #expect(hold.held?.since == .seconds(41))
        // A hold left behind does not delay a different deadline.
        #expect(hold.nextDeadline(.seconds(50), now: .seconds(45)) == .seconds(50))
        // Nothing on its way any more: the wait ends at once.
        #expect(!look(&hold, deadline: .seconds(40), inputWaiting: false, now: .milliseconds(41_020)))
        #expect(hold.held == nil)
    }
}
