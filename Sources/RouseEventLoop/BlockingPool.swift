import Dispatch
import RouseSystem
import Synchronization

/// The one home for blocking work (a name lookup, a child's wait, an `fsync`, a C library call that blocks): a few
/// threads that take jobs from a bounded queue, so that no event loop and no task on the daemons' ``LoopExecutor``
/// ever blocks. Modelled on swift-nio's `NIOThreadPool`, with a bound: when `queueLimit` jobs already wait, a new one is
/// refused (``submit(_:)`` returns false, ``run(_:)`` throws ``Full``) and counted in ``rejected``, for the caller to
/// report as a budget hit; nothing queues without limit.
///
/// Threads start through `Sys.startJoinableThread` (plain named pthreads, never libdispatch's worker pool, whose monitor
/// timer would wake an idle daemon every second) and sleep on a semaphore while there is nothing to do: an idle pool
/// costs no wake-up. Jobs run in the order they were submitted (with more than one thread, several at once).
///
/// ```swift
/// let pool = try BlockingPool(name: "rouse-blocking", threads: 2, queueLimit: 64)
/// let addresses = try await pool.run { try Sys.resolve(host: "example.org") }
/// pool.shutdownAndWait()
/// ```
package final class BlockingPool: Sendable {
    /// ``run(_:)`` found the queue full (``queueLimit`` jobs waiting).
    package struct Full: Error, Sendable, CustomStringConvertible {
        /// The pool's name.
        package let pool: String
        package var description: String { "\(pool): the blocking-work queue is full" }
    }

    /// ``run(_:)`` or ``submit(_:)`` after ``shutdownAndWait()``.
    package struct ShutDown: Error, Sendable, CustomStringConvertible {
        /// The pool's name.
        package let pool: String
        package var description: String { "\(pool): shut down" }
    }

    private struct State {
        var queue: [@Sendable () -> Void] = []
        var head = 0
        var stopped = false
        var waiting: Int { queue.count - head }
    }

    /// The pool's name, its threads' name too (numbered).
    package let name: String
    /// How many jobs may wait (not counting the ones running).
    package let queueLimit: Int
    private let state = Mutex(State())
    private let available = DispatchSemaphore(value: 0)
    private let threads: Mutex<[LoopThread]>
    private let rejectedCount = Atomic<Int>(0)

    /// Starts `threads` threads named `name-0`, `name-1`, …; at most `queueLimit` jobs wait for them.
    package init(name: String, threads: Int, queueLimit: Int) {
        self.name = name
        self.queueLimit = max(queueLimit, 0)
        self.threads = Mutex([])
        let started = (0..<max(threads, 1)).map { index in
            LoopThread(name: "\(name)-\(index)") { [self] in work() }
        }
        self.threads.withLock { $0 = started }
    }

    /// Jobs refused because the queue was full, since the pool started: a metric for the caller.
    package var rejected: Int { rejectedCount.load(ordering: .relaxed) }

    /// Jobs waiting now (not counting the ones running).
    package var waiting: Int { state.withLock { $0.waiting } }

    /// Queues `job` for a pool thread. False, and `job` never runs, when `queueLimit` jobs already wait (counted in
    /// ``rejected``) or the pool was shut down.
    @discardableResult
    package func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let queued = state.withLock { state -> Bool in
            guard !state.stopped, state.waiting < queueLimit else { return false }
            state.queue.append(job)
            return true
        }
        guard queued else {
            rejectedCount.add(1, ordering: .relaxed)
            return false
        }
        available.signal()
        return true
    }

    /// Runs `body` on a pool thread and returns its result (or its error) to the calling task, which waits without
    /// blocking its executor. Throws ``Full`` when the queue is full and ``ShutDown`` after a shutdown, without
    /// running `body`.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let queued = submit {
                continuation.resume(with: Result { try body() })
            }
            if !queued {
                let stopped = state.withLock { $0.stopped }
                continuation.resume(throwing: stopped ? ShutDown(pool: name) as any Error : Full(pool: name))
            }
        }
    }

    /// Stops taking jobs, lets the queued ones finish, and waits for the threads to end. Not from a job of this pool
    /// (a thread cannot wait for its own end).
    package func shutdownAndWait() {
        let threads = self.threads.withLock { threads in
            defer { threads = [] }
            return threads
        }
        state.withLock { $0.stopped = true }
        for _ in threads { available.signal() }
        for thread in threads { thread.join() }
    }

    /// A pool thread: takes jobs until the pool is stopped and its queue empty.
    private func work() {
        while true {
            available.wait()
            let job = state.withLock { state -> (@Sendable () -> Void)? in
                guard state.head < state.queue.count else { return nil }
                let job = state.queue[state.head]
                state.head += 1
                // Drop the consumed prefix once it is most of the array.
                if state.head > 64 && state.head * 2 > state.queue.count {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                return job
            }
            guard let job else {
                // Woken with nothing queued: only a shutdown does that.
                if state.withLock({ $0.stopped }) { return }
                continue
            }
            job()
        }
    }
}
