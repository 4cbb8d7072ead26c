import FoundationEssentials
import RouseSystem
import Synchronization

/// Work that can block in the kernel for as long as a peer wants, kept off the agent's executor: closing a
/// descriptor a peer passed (a TCP socket lingering on a zero window, a file on a FUSE mount whose flush never
/// answers), reading its size and copying an upload from it. Jobs run in order on at most ``threads`` threads of
/// their own, started when work arrives and ended when none is left (an idle agent holds none): a job that blocks
/// holds one of them, never the agent. What it did is counted for `rouse agent status` (`blockingWork`).
final class BlockingWork: Sendable {
    /// What `rouse agent status` shows.
    struct Counters: Sendable, Codable, Equatable {
        /// Jobs waiting for a thread.
        var queued = 0
        /// Jobs running (a number stuck at ``BlockingWork/threads`` means peers hold them).
        var running = 0
        /// Peer descriptors closed.
        var closed = 0
        /// Uploads copied (or refused) from a peer's descriptor.
        var copies = 0
        /// Closes waiting for a thread (part of ``queued``).
        var closesQueued = 0
    }

    private struct State {
        var queue: [(job: @Sendable () -> Void, close: Bool)] = []
        var threads = 0
        var counters = Counters()
    }

    /// Most threads at once.
    let threads: Int
    /// Most closes waiting for a thread: a close asked for beyond it is still queued (the descriptor must be
    /// closed), but ``closePeerDescriptor(_:done:)`` says so and the caller stops the peer that asked.
    let closeQueueLimit: Int
    private let closeJob: @Sendable (Int32) -> Void
    private let state = Mutex(State())

    /// `close`: how a descriptor is closed (a test makes it block, as a FUSE file's flush that never answers).
    init(threads: Int = 4, closeQueueLimit: Int = 64, close: @escaping @Sendable (Int32) -> Void = { Sys.close($0) }) {
        self.threads = threads
        self.closeQueueLimit = closeQueueLimit
        self.closeJob = close
    }

    /// The counters now.
    var counters: Counters { state.withLock { $0.counters } }

    /// Closes a descriptor a peer passed: its `SO_LINGER` reset first (a socket then closes at once, its unsent
    /// bytes left to the kernel), then closed on a thread of this pool; `done` runs once it is closed. False when
    /// more than ``closeQueueLimit`` closes were waiting (this one is queued all the same).
    @discardableResult
    func closePeerDescriptor(_ fd: Int32, done: (@Sendable () -> Void)? = nil) -> Bool {
        submit(close: true) {
            self.closeNow(fd)
            done?()
        }
    }

    /// Closes a peer's descriptor on the calling thread (one of this pool's), `SO_LINGER` reset first.
    func closeNow(_ fd: Int32) {
        try? Sys.setLinger(fd, onOff: 0, seconds: 0)  // ENOTSOCK for anything but a socket: nothing to reset
        closeJob(fd)
        state.withLock { $0.counters.closed += 1 }
    }

    /// Runs `body` on a thread of this pool; its result when it ends.
    func run<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { continuation in
            submit(close: false) { continuation.resume(returning: body()) }
        }
    }

    /// Counts one upload copy.
    func countCopy() { state.withLock { $0.counters.copies += 1 } }

    /// Queues `job` (a close when `close`); false when closes were over their limit.
    @discardableResult
    private func submit(close: Bool, _ job: @escaping @Sendable () -> Void) -> Bool {
        let (spawn, withinLimit) = state.withLock { state in
            let within = !close || state.counters.closesQueued < closeQueueLimit
            state.queue.append((job, close))
            state.counters.queued += 1
            if close { state.counters.closesQueued += 1 }
            guard state.threads < threads else { return (false, within) }
            state.threads += 1
            return (true, within)
        }
        if spawn { Sys.detachedThread(name: "rouse-agent-blocking") { self.drain() } }
        return withinLimit
    }

    private func drain() {
        while true {
            let job: (@Sendable () -> Void)? = state.withLock { state in
                guard !state.queue.isEmpty else {
                    state.threads -= 1
                    return nil
                }
                state.counters.queued -= 1
                state.counters.running += 1
                let next = state.queue.removeFirst()
                if next.close { state.counters.closesQueued -= 1 }
                return next.job
            }
            guard let job else { return }
            job()
            state.withLock { $0.counters.running -= 1 }
        }
    }
}
