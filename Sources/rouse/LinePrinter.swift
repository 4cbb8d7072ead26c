import FoundationEssentials
import RouseSystem
import Synchronization

/// Writes whole lines to stdout, unbuffered, from any thread (one line is never interleaved with another).
final class LinePrinter: Sendable {
    private let lock = Mutex(())

    func print(_ line: String) {
        lock.withLock { _ in
            StandardOutput.write(line + "\n")
        }
    }
}

/// Unbuffered writes to stdout for output that goes on (pushes, records, reachability changes). When the
/// reader has gone (`rouse send … | head -1`: EPIPE, since the HTTP/2 kernel ignores SIGPIPE process-wide),
/// the process ends quietly, the way `cat` does: by SIGPIPE, with no message. Any other write error (a full
/// disk) is reported on stderr and ends the process with EX_IOERR.
enum StandardOutput {
    static func write(_ text: String) {
        do throws(SystemError) {
            try Sys.writeAll(1, text.utf8, path: nil)
        } catch {
            if error.code == .brokenPipe { readerGone() }
            Sys.writeStandardError("rouse: cannot write to standard output: \(error)\n")
            Sys.exit(74)  // EX_IOERR
        }
    }

    /// Ends the process by SIGPIPE (its default action: no core, no message; a shell with `pipefail` sees
    /// 141, as for any other program in the pipeline).
    static func readerGone() -> Never {
        Sys.dieOfBrokenPipe()
    }
}
