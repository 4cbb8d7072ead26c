import RouseAgentCore
import Testing

/// The memory-pressure order and episodes without a process: candidates and stall counters are plain values.
@Suite("Memory pressure: who goes first, and when")
struct MemoryPressureTests {
    typealias Candidate = MemoryPressurePolicy.Candidate

    static let mib: Int64 = 1 << 20

    @Test func suspendedHandlersGoFirstLargestFirstThenRunningBackgroundOnesLargestFirst() {
        let candidates = [
            Candidate(name: "bg-small", lifecycle: .background, memoryBytes: 10 * Self.mib, protected: false),
            Candidate(name: "frozen-small", lifecycle: .suspended, memoryBytes: 20 * Self.mib, protected: false),
            Candidate(name: "bg-large", lifecycle: .background, memoryBytes: 900 * Self.mib, protected: false),
            Candidate(name: "frozen-large", lifecycle: .suspended, memoryBytes: 200 * Self.mib, protected: false),
            Candidate(name: "launching", lifecycle: .launching, memoryBytes: 1 * Self.mib, protected: false),
        ]
        let order = MemoryPressurePolicy.order(candidates)
        // A running background handler four times the size of any frozen one still goes after all frozen ones.
        #expect(order.map(\.name) == ["frozen-large", "frozen-small", "bg-large", "bg-small", "launching"])
        #expect(order.map(\.running) == [false, false, true, true, true])
    }

    @Test func callsSessionsForegroundAndStoppedHandlersAreNeverChosen() {
        let candidates = [
            Candidate(name: "call", lifecycle: .background, memoryBytes: 2000 * Self.mib, protected: true),
            Candidate(name: "frozen-call", lifecycle: .suspended, memoryBytes: 3000 * Self.mib, protected: true),
            Candidate(name: "front", lifecycle: .active, memoryBytes: 4000 * Self.mib, protected: false),
            Candidate(name: "inactive", lifecycle: .inactive, memoryBytes: 4000 * Self.mib, protected: false),
            Candidate(name: "stopped", lifecycle: .notRunning, memoryBytes: nil, protected: false),
            Candidate(name: "frozen", lifecycle: .suspended, memoryBytes: 1 * Self.mib, protected: false),
        ]
        #expect(MemoryPressurePolicy.order(candidates).map(\.name) == ["frozen"])
        #expect(MemoryPressurePolicy.order(Array(candidates.prefix(5))).isEmpty)
    }

    @Test func anUnknownFootprintCountsAsTheSmallestAndTiesKeepTheNamesOrder() {
        let candidates = [
            Candidate(name: "b", lifecycle: .suspended, memoryBytes: 5, protected: false),
            Candidate(name: "unknown", lifecycle: .suspended, memoryBytes: nil, protected: false),
            Candidate(name: "a", lifecycle: .suspended, memoryBytes: 5, protected: false),
            Candidate(name: "zero", lifecycle: .suspended, memoryBytes: 0, protected: false),
        ]
        #expect(MemoryPressurePolicy.order(candidates).map(\.name) == ["a", "b", "zero", "unknown"])
    }

    @Test func theKernelsOOMOrderFollowsThePolicy() {
        let suspended = MemoryPressurePolicy.oomScoreAdjust(.suspended, protected: false)
        let background = MemoryPressurePolicy.oomScoreAdjust(.background, protected: false)
        let foreground = MemoryPressurePolicy.oomScoreAdjust(.active, protected: false)
        let call = MemoryPressurePolicy.oomScoreAdjust(.background, protected: true)
        #expect(suspended > background && background > foreground)
        #expect(call == foreground && foreground >= 0)
        #expect(suspended <= 1000)
    }

    @Test(arguments: [
        ("some 150000 1000000", "some 150000 1000000"),
        ("full  50000   500000", "full 50000 500000"),
    ])
    func triggersTheKernelTakesAreParsed(text: String, written: String) throws {
        let trigger = try MemoryPressureTrigger.parse(text).get()
        #expect(trigger.description == written)
    }

    @Test(arguments: [
        ("", "expected"), ("some 1", "expected"), ("avg 1 1000000", "'some' or 'full'"),
        ("some x 1000000", "whole microseconds"), ("some 100 100", "500000 to 10000000"),
        ("some 0 1000000", "more than 0"), ("some 2000000 1000000", "at most the window"),
        ("some 1 1000000 7", "expected"),
    ])
    func triggersTheKernelRefusesAreRefusedWithTheReason(text: String, reason: String) {
        guard case .failure(let error) = MemoryPressureTrigger.parse(text) else {
            Issue.record("'\(text)' was accepted")
            return
        }
        #expect(error.description.contains(reason), "\(error)")
    }

    static let trigger = MemoryPressureTrigger(kind: .some, stallMicroseconds: 150_000, windowMicroseconds: 1_000_000)

    @Test func theFirstTriggerWarnsASecondOneTerminates() {
        var machine = MemoryPressureMachine(trigger: Self.trigger, persistAfter: .seconds(2))
        #expect(machine.nextCheck == nil)
        #expect(machine.fired(now: .seconds(10), stallMicroseconds: 1_000) == [.warn])
        #expect(machine.nextCheck == .seconds(12))
        #expect(machine.fired(now: .seconds(11), stallMicroseconds: 200_000) == [.terminateNext])
        #expect(machine.fired(now: .seconds(12), stallMicroseconds: 400_000) == [.terminateNext])
        #expect(machine.terminations == 2 && machine.episodes == 1)
    }

    @Test func aCheckStillAboveTheRateTerminatesOneBelowEndsTheEpisode() {
        var machine = MemoryPressureMachine(trigger: Self.trigger, persistAfter: .seconds(2))
        _ = machine.fired(now: .seconds(10), stallMicroseconds: 1_000_000)
        // Early: nothing.
        #expect(machine.check(now: .seconds(11), stallMicroseconds: 9_000_000).isEmpty)
        // 2 s at 150 ms/s is 300 ms of stall: 310 ms is still above.
        #expect(machine.check(now: .seconds(12), stallMicroseconds: 1_310_000) == [.terminateNext])
        #expect(machine.nextCheck == .seconds(14))
        // 2 s more with 290 ms of stall: below, relieved 4 s after the first trigger.
        #expect(machine.check(now: .seconds(14), stallMicroseconds: 1_600_000) == [.relieved(after: .seconds(4))])
        #expect(machine.nextCheck == nil && machine.episodeStart == nil)
        #expect(machine.lastRelief == .seconds(4))
        // The next trigger begins a new episode: a warning again.
        #expect(machine.fired(now: .seconds(30), stallMicroseconds: 1_700_000) == [.warn])
        #expect(machine.episodes == 2)
    }

    @Test func withoutPressureNothingIsScheduled() {
        var machine = MemoryPressureMachine(trigger: Self.trigger, persistAfter: .seconds(2))
        #expect(machine.check(now: .seconds(100), stallMicroseconds: 0).isEmpty)
        #expect(machine.nextCheck == nil)
    }
}
