import Testing

@testable import RouseEventLoop

@Suite("TimerHeap")
struct TimerHeapTests {
    /// Deadlines come out in order, and timers with the same deadline in the order they were inserted.
    @Test func dueTimersComeOutByDeadlineThenInsertion() {
        var heap = TimerHeap()
        var fired: [String] = []
        for (deadline, name) in [(30, "c"), (10, "a1"), (20, "b"), (10, "a2"), (10, "a3"), (5, "first")] {
            _ = heap.insert(deadline: UInt64(deadline)) { fired.append(name) }
        }
        heap.runDue(now: 25)
        #expect(fired == ["first", "a1", "a2", "a3", "b"])
        heap.runDue(now: 30)
        #expect(fired.last == "c")
        #expect(heap.takeDue(now: .max).isEmpty)
    }

    /// A cancelled timer never runs, and it does not hold the loop's timeout: the next live timer does.
    @Test func aCancelledTimerNeitherRunsNorSetsTheTimeout() {
        var heap = TimerHeap()
        var fired: [Int] = []
        let early = heap.insert(deadline: 1_000_000) { fired.append(1) }
        _ = heap.insert(deadline: 5_000_000) { fired.append(5) }
        heap.cancel(early)
        #expect(heap.millisecondsUntilNext(now: 0) == 5)
        heap.runDue(now: 10_000_000)
        #expect(fired == [5])
        #expect(heap.millisecondsUntilNext(now: 0) == -1)
    }

    /// A timer cancelled by a callback of the same pass never runs, although it came due with the one that cancelled
    /// it (its body is taken only when its turn comes), and the heap is left empty.
    @Test func aTimerCancelledByAnEarlierOneOfTheSamePassNeverRuns() {
        var heap = TimerHeap()
        var fired: [String] = []
        var victim: UInt64 = 0
        _ = heap.insert(deadline: 10) {
            fired.append("canceller")
            heap.cancel(victim)
        }
        victim = heap.insert(deadline: 10) { fired.append("victim") }
        _ = heap.insert(deadline: 10) { fired.append("after") }
        for id in heap.takeDue(now: 10) {
            if let body = heap.start(id) { body() }
        }
        #expect(fired == ["canceller", "after"])
        #expect(heap.count == 0)
        #expect(heap.millisecondsUntilNext(now: 10) == -1)
    }

    /// The timeout rounds up (a loop woken early would spin), is 0 for a timer already due, -1 with no timer, and
    /// stays within `Int32` for a timer years away.
    @Test func theTimeoutRoundsUpAndStaysInRange() {
        var heap = TimerHeap()
        #expect(heap.millisecondsUntilNext(now: 0) == -1)
        _ = heap.insert(deadline: 1_000_001) {}
        #expect(heap.millisecondsUntilNext(now: 0) == 2)
        #expect(heap.millisecondsUntilNext(now: 1_000_001) == 0)
        #expect(heap.millisecondsUntilNext(now: 5_000_000) == 0)
        var far = TimerHeap()
        _ = far.insert(deadline: .max) {}
        #expect(far.millisecondsUntilNext(now: 0) == Int32.max)
    }

    /// Many timers inserted in a scrambled order come out sorted (the heap property holds through pops).
    @Test func manyTimersComeOutSorted() {
        var heap = TimerHeap()
        var fired: [UInt64] = []
        var value: UInt64 = 7
        for _ in 0..<500 {
            value = (value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407) % 10_000
            let deadline = value
            _ = heap.insert(deadline: deadline) { fired.append(deadline) }
        }
        heap.runDue(now: .max)
        #expect(fired.count == 500)
        #expect(fired == fired.sorted())
    }
}

extension TimerHeap {
    /// One loop pass's timers: the due ones, each run unless cancelled by one run before it.
    mutating func runDue(now: UInt64) {
        for id in takeDue(now: now) { start(id)?() }
    }
}
