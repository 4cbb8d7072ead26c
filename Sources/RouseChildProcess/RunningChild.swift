import Foundation

/// A long-running child started by ``ChildProcess/start(_:_:environment:stdout:stderr:onStdoutLine:)``, in a
/// process group of its own. When the last reference goes away while it still runs, its whole process group is
/// killed (SIGKILL): a test that fails half-way, or a benchmark that throws, leaves nothing running.
///
/// The names `processIdentifier`, `isRunning`, `terminate()`, `waitUntilExit()` and `terminationStatus` are
/// those of `Foundation.Process`, which this replaces in the test fixtures.
package final class RunningChild: Sendable {
    /// The child's pid, which is also its process group's id.
    package let processIdentifier: pid_t
    /// The child's stdout, line by line, when started with `stdout: .lines` (otherwise it ends at once).
    package let lines: LineReader
    private let exit: ChildExit

    init(exit: ChildExit, lines: LineReader) {
        self.exit = exit
        self.processIdentifier = exit.pid
        self.lines = lines
    }

    deinit {
        exit.send(SIGKILL, group: true)
    }

    /// True until the child has exited (and was reaped).
    package var isRunning: Bool { exit.raw == nil }

    /// The exit code, or 128 + the signal that ended it; -1 while the child runs.
    package var terminationStatus: Int32 { exit.raw.map { ChildProcess.decode($0).status } ?? -1 }

    /// Sends `signal` to the child itself (not its process group) while it runs.
    package func signal(_ signal: Int32) { exit.send(signal, group: false) }

    /// SIGTERM to the child (a graceful stop); see ``wait(timeout:)`` for its outcome.
    package func terminate() { signal(SIGTERM) }

    /// SIGKILL to the child's whole process group, then blocks until the child was reaped (promptly: nothing can
    /// delay a SIGKILL, and its exit does not wait for the pipes that a descendant may still hold open).
    package func kill() {
        exit.send(SIGKILL, group: true)
        waitUntilExit()
    }

    /// Blocks this thread until the child has exited.
    package func waitUntilExit() { _ = exit.blockingWait() }

    /// Waits until the child has exited, at most `timeout`; its exit code, or 128 + the signal that ended it.
    package func wait(timeout: Duration) async throws -> Int32 {
        ChildProcess.decode(try await exit.wait(timeout: timeout)).status
    }
}
