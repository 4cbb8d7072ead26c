import RouseSender
import Testing

/// Without idle PINGs (rouse-pushd) an idle pool wants no ticks, so its shell's timer stops; it wakes for the next
/// push, and a quiet busy connection is still checked with a PING.
@Suite("Pool state machine: asleep when idle")
struct PoolIdleTests {
    @Test func anIdlePoolWithoutIdlePingsWantsNoTicks() {
        var d = PoolDriver { $0.pingWhileIdle = false }
        #expect(!d.machine.needsTicks)
        d.submit(1)
        #expect(d.machine.needsTicks)
        let c = d.connects[0]
        d.connect(c, limit: 10)
        d.answer(1, PoolDriver.ok)
        #expect(!d.machine.needsTicks, "a ready idle connection needs no ticks without idle PINGs")
        d.advance(.seconds(3600))
        #expect(d.pings.isEmpty, "an idle connection got a PING")
        // Health is checked on use: a push that stays unanswered gets its connection PINGed.
        d.submit(2)
        d.advance(.milliseconds(600))
        #expect(d.pings == [c])
        #expect(d.machine.needsTicks)
    }

    @Test func withIdlePingsAReadyConnectionKeepsTicking() {
        var d = PoolDriver()
        d.submit(1)
        d.connect(d.connects[0], limit: 10)
        d.answer(1, PoolDriver.ok)
        #expect(d.machine.needsTicks)
        d.advance(.seconds(61))
        #expect(d.pings == [d.connects[0]])
    }
}
