import Foundation
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
        do {
            try FileHandle.standardOutput.write(contentsOf: Data(text.utf8))
        } catch {
            if isBrokenPipe(error) { readerGone() }
            FileHandle.standardError.write(Data("rouse: cannot write to standard output: \(error)\n".utf8))
            Sys.exit(74)  // EX_IOERR
        }
    }

    /// EPIPE, however Foundation wraps it (a POSIX error, or an NSError in the POSIX domain).
    static func isBrokenPipe(_ error: any Error) -> Bool {
        if let posix = error as? POSIXError { return posix.code == .EPIPE }
        let bridged = error as NSError
        if bridged.domain == NSPOSIXErrorDomain { return bridged.code == Int(EPIPE) }
        if let underlying = bridged.userInfo[NSUnderlyingErrorKey] as? NSError {
            return underlying.domain == NSPOSIXErrorDomain && underlying.code == Int(EPIPE)
        }
        return false
    }

    /// Ends the process by SIGPIPE (its default action: no core, no message; a shell with `pipefail` sees
    /// 141, as for any other program in the pipeline).
    static func readerGone() -> Never {
        Sys.dieOfBrokenPipe()
    }
}
