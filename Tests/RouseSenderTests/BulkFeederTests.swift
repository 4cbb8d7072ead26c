import Dispatch
import Synchronization
import Testing

@testable import RouseSender

@Suite("Bulk feeder: the next push is submitted where the last one finished (no sockets)")
struct BulkFeederTests {
    /// What the submit closure saw.
    struct Seen {
        var submitted: [Int] = []
        var unfinished = 0
        var mostUnfinished = 0
        var depth = 0
        var deepest = 0
    }

    @Test func everyIndexOnceNeverMoreThanTheLimitWithOutcomesFromOtherThreads() async {
        let seen = Mutex(Seen())
        let count = 20_000
        let limit = 7
        let feeder = BulkFeeder(count: count, limit: limit) { index, feeder in
            seen.withLock { s in
                s.submitted.append(index)
                s.unfinished += 1
                s.mostUnfinished = max(s.mostUnfinished, s.unfinished)
            }
            DispatchQueue.global().async {
                seen.withLock { $0.unfinished -= 1 }
                feeder.finished()
            }
        }
        await feeder.run()
        let result = seen.withLock { $0 }
        #expect(result.submitted.sorted() == Array(0..<count))
        #expect(result.mostUnfinished == limit)
        #expect(result.unfinished == 0)
    }

    /// Outcomes that arrive inside `submit` (pre-flight refusals) must not recurse: a tokens file of 100,000 bad
    /// tokens would overflow the stack. (1,000 here, so a recursion shows as a depth, not as a crash.)
    @Test func outcomesInsideSubmitDoNotNest() async {
        let seen = Mutex(Seen())
        let count = 1_000
        let feeder = BulkFeeder(count: count, limit: 100) { index, feeder in
            seen.withLock { s in
                s.submitted.append(index)
                s.depth += 1
                s.deepest = max(s.deepest, s.depth)
            }
            feeder.finished()
            seen.withLock { $0.depth -= 1 }
        }
        await feeder.run()
        let result = seen.withLock { $0 }
        #expect(result.submitted == Array(0..<count))
        #expect(result.deepest == 1)
    }

    @Test func nothingToSendReturnsAtOnce() async {
        let submitted = Atomic<Int>(0)
        let feeder = BulkFeeder(count: 0, limit: 10) { _, _ in submitted.add(1, ordering: .relaxed) }
        await feeder.run()
        #expect(submitted.load(ordering: .relaxed) == 0)
    }
}
