import Dispatch
import RouseEventLoop
import Synchronization
import Testing

@Suite("BlockingPool", .timeLimit(.minutes(1)))
struct BlockingPoolTests {
    /// `run` returns the body's result, or rethrows its error, to the calling task.
    @Test func runReturnsResultsAndErrors() async throws {
        let pool = BlockingPool(name: "test-pool", threads: 2, queueLimit: 8)
        defer { pool.shutdownAndWait() }
        #expect(try await pool.run { 6 * 7 } == 42)
        struct Boom: Error {}
        await #expect(throws: Boom.self) { try await pool.run { throw Boom() } }
    }

    /// The queue is bounded: with the only thread busy and `queueLimit` jobs waiting, the next job is refused, never
    /// run, and counted; once the thread is free, jobs are taken again in order.
    @Test func aFullQueueRefusesAndCounts() async throws {
        let pool = BlockingPool(name: "test-bounded", threads: 1, queueLimit: 2)
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let order = Mutex<[Int]>([])
        #expect(
            pool.submit {
                started.signal()
                gate.wait()
            })
        started.wait()
        #expect(pool.submit { order.withLock { $0.append(1) } })
        #expect(pool.submit { order.withLock { $0.append(2) } })
        #expect(!pool.submit { order.withLock { $0.append(3) } })
        await #expect(throws: BlockingPool.Full.self) { try await pool.run { 0 } }
        #expect(pool.rejected == 2)
        #expect(pool.waiting == 2)
        gate.signal()
        pool.shutdownAndWait()
        #expect(order.withLock { $0 } == [1, 2])
    }

    /// Shutdown lets the queued jobs finish, then refuses new ones.
    @Test func shutdownFinishesQueuedJobsThenRefuses() async throws {
        let pool = BlockingPool(name: "test-shutdown", threads: 3, queueLimit: 100)
        let ran = Atomic<Int>(0)
        for _ in 0..<100 { #expect(pool.submit { ran.add(1, ordering: .relaxed) }) }
        pool.shutdownAndWait()
        #expect(ran.load(ordering: .relaxed) == 100)
        #expect(!pool.submit {})
        await #expect(throws: BlockingPool.ShutDown.self) { try await pool.run { 0 } }
    }
}
