import Dispatch
import Foundation
import RouseSystem
import Synchronization

/// The exit of one spawned child: a thread of its own waits for it, then reaps it.
///
/// Signals go out under the same lock the reaper takes to reap, so a signal never reaches a process that merely
/// reuses the pid: until it is reaped, the exited child (a zombie) still holds its pid and its process group's.
final class ChildExit: Sendable {
    let pid: pid_t
    private let state = Mutex(State())
    /// Signalled once the child is reaped (for blocking waits).
    private let reaped = DispatchSemaphore(value: 0)

    private struct State {
        /// The raw wait status, once reaped.
        var raw: Int32?
        var waiters: [Int: CheckedContinuation<Int32?, Never>] = [:]
        var nextWaiter = 0
    }

    init(pid: pid_t) {
        self.pid = pid
        Sys.detachedThread(name: "rouse-child-exit") { [self] in
            Sys.waitForExit(pid: pid)
            let waiters = state.withLock { state in
                let raw = Sys.reap(pid)
                state.raw = raw
                defer { state.waiters = [:] }
                return state.waiters.values.map { ($0, raw) }
            }
            for (waiter, raw) in waiters { waiter.resume(returning: raw) }
            reaped.signal()
        }
    }

    /// The raw wait status, or nil while the child runs.
    var raw: Int32? { state.withLock { $0.raw } }

    /// Sends `signal` to the child (with `group`: to its whole process group) unless it was reaped already.
    func send(_ signal: Int32, group: Bool) {
        state.withLock { state in
            if state.raw == nil { _ = group ? Sys.signalGroup(pid, signal) : Sys.signal(pid: pid, signal) }
        }
    }

    /// Blocks this thread until the child was reaped; its raw wait status.
    func blockingWait() -> Int32 {
        reaped.wait()
        reaped.signal()
        return raw ?? -1
    }

    /// Waits until the child was reaped; its raw wait status, or nil when the task was cancelled first.
    func wait() async -> Int32? {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Int32?, Never>) in
                let raw: Int32?? = state.withLock { state in
                    if let raw = state.raw { return .some(raw) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[id] = continuation
                    return .none
                }
                if let raw { continuation.resume(returning: raw) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// Waits until the child was reaped, at most `timeout`; its raw wait status.
    func wait(timeout: Duration) async throws -> Int32 {
        try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask { await self.wait() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let raw = try await group.next() ?? nil else {
                throw ChildProcess.Failure(description: "process \(pid) still running after \(timeout)")
            }
            return raw
        }
    }
}
