import RouseClock
import Synchronization
import Testing

@Suite struct ManualClockTests {
    /// Waits (by yielding, not sleeping) until `count` tasks sleep on the clock.
    private func sleepers(_ clock: ManualClock, reach count: Int) async {
        while clock.sleeperCount < count { await Task.yield() }
    }

    @Test func sleepersWakeOnlyWhenTheirDeadlinePasses() async throws {
        let clock = ManualClock()
        let tasks = (1...3).map { index in
            Task { () async throws -> RouseInstant in
                try await clock.sleep(for: .seconds(index * 10))
                return clock.now
            }
        }
        await sleepers(clock, reach: 3)
        clock.advance(by: .seconds(9))
        #expect(clock.sleeperCount == 3)
        clock.advance(by: .seconds(11))
        #expect(try await tasks[0].value == RouseInstant(offset: .seconds(20)))
        #expect(try await tasks[1].value == RouseInstant(offset: .seconds(20)))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(10))
        #expect(try await tasks[2].value == RouseInstant(offset: .seconds(30)))
    }

    @Test func cancelledSleeperThrowsAtOnce() async {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)) }
        await sleepers(clock, reach: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func pastDeadlineReturnsWithoutWaiting() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(5))
        try await clock.sleep(until: RouseInstant(offset: .seconds(1)))
        #expect(clock.now == RouseInstant(offset: .seconds(5)))
    }

    @Test func advancingMovesTheWallClockTooAndTellsObservers() {
        let clock = ManualClock(wallMilliseconds: 1_000)
        let told = Counter()
        clock.whenAdvanced { told.add() }
        clock.advance(by: .milliseconds(1_500))
        #expect(clock.wallMilliseconds == 2_500)
        clock.setWall(milliseconds: 0)
        #expect(clock.wallMilliseconds == 0)
        #expect(clock.now.offset == .milliseconds(1_500))
        #expect(told.value == 2)
        // Advances shorter than a millisecond add up on the wall clock too.
        for _ in 0..<4 { clock.advance(by: .microseconds(250)) }
        #expect(clock.wallMilliseconds == 1)
    }

    @Test func systemClockMovesForwardAndReadsTheWallClock() async throws {
        let clock = SystemClock()
        let before = clock.now
        try await clock.sleep(for: .milliseconds(5))
        #expect(clock.now.offset - before.offset >= .milliseconds(5))
        // 2020-01-01 in UNIX milliseconds: a wall clock before it is not read from CLOCK_REALTIME.
        #expect(clock.wallMilliseconds > 1_577_836_800_000)
    }

    @Test func durationConversions() {
        #expect(Duration.milliseconds(-500).wholeNanoseconds == 0)
        #expect(Duration.seconds(2).wholeNanoseconds == 2_000_000_000)
        #expect(Duration.microseconds(1_500).wholeNanoseconds == 1_500_000)
        #expect(Duration.milliseconds(-1_500).wholeMilliseconds == -1_500)
        #expect(Duration.microseconds(2_500).wholeMilliseconds == 2)
        #expect(Duration.milliseconds(1_250).inSeconds == 1.25)
        #expect(Duration.microseconds(1_500).inMilliseconds == 1.5)
        #expect(Duration.nanoseconds(2_500).inMicroseconds == 2.5)
    }
}

private final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
