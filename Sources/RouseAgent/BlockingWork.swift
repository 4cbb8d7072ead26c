import Foundation
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
    }

    private struct State {
        var queue: [@Sendable () -> Void] = []
        var threads = 0
        var counters = Counters()
    }

    /// Most threads at once.
    let threads: Int
    private let state = Mutex(State())

    init(threads: Int = 4) { self.threads = threads }

    /// The counters now.
    var counters: Counters { state.withLock { $0.counters } }

    /// Closes a descriptor a peer passed: its `SO_LINGER` reset first (a socket then closes at once, its unsent
    /// bytes left to the kernel), then closed on a thread of this pool.
    func closePeerDescriptor(_ fd: Int32) {
        submit { self.closeNow(fd) }
    }

    /// Closes a peer's descriptor on the calling thread (one of this pool's), `SO_LINGER` reset first.
    func closeNow(_ fd: Int32) {
        try? Sys.setLinger(fd, onOff: 0, seconds: 0)  // ENOTSOCK for anything but a socket: nothing to reset
        Sys.close(fd)
        state.withLock { $0.counters.closed += 1 }
    }

    /// Runs `body` on a thread of this pool; its result when it ends.
    func run<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { continuation in
            submit { continuation.resume(returning: body()) }
        }
    }

    /// Counts one upload copy.
    func countCopy() { state.withLock { $0.counters.copies += 1 } }

    private func submit(_ job: @escaping @Sendable () -> Void) {
        let spawn = state.withLock { state in
            state.queue.append(job)
            state.counters.queued += 1
            guard state.threads < threads else { return false }
            state.threads += 1
            return true
        }
        guard spawn else { return }
        Sys.detachedThread(name: "rouse-agent-blocking") { self.drain() }
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
                return state.queue.removeFirst()
            }
            guard let job else { return }
            job()
            state.withLock { $0.counters.running -= 1 }
        }
    }
}
