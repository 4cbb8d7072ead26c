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
        #expect(hold.heldSince == nil)
    }

    /// A deadline computed from "now" (a refilled background budget's) is a different value at every look: the grace
    /// still runs out, and no look is due at once (the agent's timer would spin).
    @Test func aDeadlineThatMovesWithNowStillEndsTheWait() {
        var hold = InputBeforeDeadline()
        var now = Duration.seconds(100)
        var looks = 0
        while look(&hold, deadline: now, inputWaiting: true, now: now) {
            let next = hold.nextDeadline(now, now: now)
            #expect(next.map { $0 > now } == true, "look \(looks) at \(now): next \(String(describing: next))")
            now = next ?? now + .seconds(1)
            looks += 1
            if looks > 1000 { break }
        }
        #expect(looks == 100, "\(looks) looks")
        #expect(now == .seconds(102))
    }

    @Test func aWaitEndsAtTheFirstLookWithoutInputAndTheNextHasItsOwnGrace() {
        var hold = InputBeforeDeadline()
        #expect(look(&hold, deadline: .seconds(10), inputWaiting: true, now: .seconds(10)))
        // The input was the answer: the next look (due within 20 ms even with no deadline left) ends the wait.
        #expect(hold.nextDeadline(nil, now: .seconds(10)) == .seconds(10) + InputBeforeDeadline.recheck)
        #expect(!look(&hold, deadline: nil, inputWaiting: false, now: .milliseconds(10_020)))
        #expect(hold.heldSince == nil)
        // A later deadline with input on its way: a wait of its own.
        #expect(look(&hold, deadline: .seconds(40), inputWaiting: true, now: .seconds(41)))
        #expect(hold.heldSince == .seconds(41))
        // A deadline not yet due while waiting: looked at when due or in 20 ms, whichever is first.
        #expect(hold.nextDeadline(.milliseconds(41_005), now: .seconds(41)) == .milliseconds(41_005))
    }
}
