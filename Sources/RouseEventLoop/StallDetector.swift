import Glibc
import RouseClock
import RouseSystem

/// Notices a callback of an event loop that held its thread too long: one that blocked (a synchronous connect, a
/// disk write, a lock held by a stuck thread) stops every other connection, timer and task on that loop, and a daemon
/// has one. On only when `ROUSE_LOOP_STALL_LIMIT_MS` is set (the test command sets it for every test run); a stall
/// then ends the process with the loop's name and the time held, so the test that caused it fails.
///
/// The message goes to standard error and, when `ROUSE_LOOP_STALL_REPORT` names a file, is appended to it as well: the
/// tests' harness (`TestScope`) gives each daemon it starts such a file, whose stderr may go nowhere, and fails the test
/// with the message when the file is not empty at the test's end.
///
/// Each callback (a descriptor's handler, a job handed over with `execute`, a timer) is timed on its own, so a flood of
/// short jobs does not count as one long one. A loaded machine must not make it fire: the time the thread waited for a
/// CPU since the loop's pass began (the kernel's run-queue delay, `/proc/thread-self/schedstat`, read at the start of
/// each pass and after a callback that ran long) is not counted, only time running or blocked.
final class StallDetector: Sendable {
    /// The longest a pass may hold the loop, in nanoseconds.
    let limit: UInt64
    let loop: String
    /// A file the message is appended to (`ROUSE_LOOP_STALL_REPORT`), if any.
    let report: String?
    private let clock = SystemClock()

    init(loop: String, limit: Duration, report: String? = nil) {
        self.loop = loop
        self.limit = limit.wholeNanoseconds
        self.report = report
    }

    /// A detector when `ROUSE_LOOP_STALL_LIMIT_MS` holds a positive number; nil (off) otherwise.
    static func fromEnvironment(loop: String) -> StallDetector? {
        guard let text = Sys.environment("ROUSE_LOOP_STALL_LIMIT_MS"), let ms = Int64(text), ms > 0 else { return nil }
        let report = Sys.environment("ROUSE_LOOP_STALL_REPORT").flatMap { $0.isEmpty ? nil : $0 }
        return StallDetector(loop: loop, limit: .milliseconds(ms), report: report)
    }

    /// A pass's start: the thread's run-queue delay so far.
    struct Pass {
        var waited: UInt64
    }

    func begin() -> Pass { Pass(waited: Self.runQueueDelay()) }

    /// Runs one callback of the pass, and ends the process if it held the loop past the limit.
    func measure(_ pass: Pass, _ callback: () -> Void) {
        let started = clock.now.nanoseconds
        callback()
        let elapsed = clock.now.nanoseconds &- started
        guard elapsed > limit else { return }
        // An upper bound of the wait during this callback: the wait since the pass began.
        let waited = Self.runQueueDelay() &- pass.waited
        let held = elapsed > waited ? elapsed - waited : 0
        guard held > limit else { return }
        let message =
            "event loop \(loop): one callback held the loop \(held / 1_000_000) ms (limit \(limit / 1_000_000) ms, "
            + "\(waited / 1_000_000) ms more waiting for a CPU not counted): it blocked the loop\n"
        Sys.writeStandardError(message)
        if let report, let fd = try? Sys.open(report, O_WRONLY | O_CREAT | O_APPEND, mode: 0o644) {
            try? Sys.writeAll(fd, Array(message.utf8), path: report)
            Sys.close(fd)
        }
        preconditionFailure(message)
    }

    /// Nanoseconds the calling thread has spent runnable but waiting for a CPU (the second field of
    /// `/proc/thread-self/schedstat`); 0 when the kernel does not keep it.
    static func runQueueDelay() -> UInt64 {
        guard let text = Sys.readText("/proc/thread-self/schedstat", maxBytes: 128) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count >= 2, let value = UInt64(fields[1]) else { return 0 }
        return value
    }
}
