import Dispatch
import Glibc
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency

/// Swift concurrency's executors (main and default) for a whole daemon process (see ``DaemonMain``): one
/// epoll ``EventLoop`` thread runs every task, actor and `Task.sleep`, and sleeps in `epoll_wait` until work or a
/// timer is due.
///
/// Why: on Linux the default executor is libdispatch's, and once one of its worker threads has run, libdispatch
/// arms a timer that wakes its manager thread every second for the life of the process
/// (`_dispatch_workq_monitor_pools`): about 60 wake-ups a minute in a daemon that has nothing to do. Installed
/// with `_createExecutors(factory:)` (Swift 6.3, SPI `ExperimentalCustomExecutors`) before any task exists; its
/// scheduling side (`SchedulingExecutor`) catches every `Task.sleep`, which would otherwise go to libdispatch's
/// timers. The daemons' blocking work (the agent's process waits, IPC reads, libcurl, netlink; the gateway's store
/// thread and server loops) has threads of its own, so one thread is enough for the rest; nothing may block it.
/// Nothing else in such a process may use libdispatch's queues either (`DispatchQueue.global()`, a serial queue's
/// `async`, a `DispatchSource`): a semaphore is fine, a queue starts the worker pool and its monitor.
package final class LoopExecutor: MainExecutor, TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    // `loop` is thread-safe through `execute`; timers are created on the loop thread only.
    package let loop: EventLoop
    private let finished = DispatchSemaphore(value: 0)

    /// An executor on `loop` (running), not installed: tasks reach it with `Task(executorPreference:)`. For tests; a
    /// daemon uses ``install(name:)``.
    package init(loop: EventLoop) { self.loop = loop }

    /// The installed executor (nil until ``install()``).
    nonisolated(unsafe) package private(set) static var shared: LoopExecutor?

    /// Creates the loop (its thread named `name`), starts its thread and makes it Swift concurrency's main and
    /// default executor. Call once, first thing in `main`, before any task or actor is used.
    package static func install(name: String) throws -> LoopExecutor {
        let executor = LoopExecutor(loop: try EventLoop(name: name))
        shared = executor
        _createExecutors(factory: Factory.self)
        executor.loop.start()
        return executor
    }

    private struct Factory: ExecutorFactory {
        static var mainExecutor: any MainExecutor { installed }
        static var defaultExecutor: any TaskExecutor { installed }

        /// Swift asks the factory only after `install` set `shared` (`_createExecutors` is called there).
        private static var installed: LoopExecutor {
            guard let executor = LoopExecutor.shared else { preconditionFailure("LoopExecutor.install was not called") }
            return executor
        }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { [self] in run(job) }
    }

    package func enqueue<C: Clock>(
        _ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C
    ) {
        let job = UnownedJob(job)
        // The continuous and suspending clocks (all the agent uses) measure in `Duration`; the loop's timers run on
        // its clock, the SystemClock (CLOCK_MONOTONIC) that `install` gives it.
        let wait = max(.zero, (delay as? Duration) ?? .zero)  // a deadline already past: now
        loop.execute { [self] in
            loop.schedule(after: wait) { [self] in run(job) }
        }
    }

    private func run(_ job: UnownedJob) {
        job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
    }

    /// One thread: it is the main executor as well.
    package var isMainExecutor: Bool { true }

    /// The loop runs on its own thread from ``install()``: this only waits until ``stop()``.
    package func run() throws { finished.wait() }

    package func stop() { finished.signal() }
}
