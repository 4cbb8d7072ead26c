import CRouseSys
import Glibc

// The process's own state: its signal mask and dispositions, its exit, its standard streams, its threads' identity,
// the C heap. Errno policy as in `Syscalls.swift`; none of these fail in a way a caller could act on, so none throws.
extension Sys {
    /// Blocks `signals` in the calling thread (`pthread_sigmask(SIG_BLOCK)`); threads created afterwards inherit the
    /// mask. Returns the set, for `sigwait`.
    @discardableResult
    package static func blockSignals(_ signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        return set
    }

    /// `SIGPIPE` ignored process-wide: a write to a socket or pipe whose reader left returns `EPIPE` instead of
    /// killing the process.
    package static func ignoreBrokenPipe() {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
    }

    /// Ends the process by `SIGPIPE` (its default action restored and the signal unblocked first): what a program in
    /// a pipeline whose reader left does, quietly (a shell with `pipefail` sees 141).
    package static func dieOfBrokenPipe() -> Never {
        _ = Glibc.signal(SIGPIPE, SIG_DFL)
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        pthread_sigmask(SIG_UNBLOCK, &pipeOnly, nil)
        Glibc.raise(SIGPIPE)
        Glibc._exit(128 + SIGPIPE)
    }

    /// Sends `signal` to the calling process itself (`raise(3)`).
    package static func raise(_ signal: Int32) {
        _ = Glibc.raise(signal)
    }

    /// Ends the process with `status` (`exit(3)`: atexit handlers run, stdio is flushed).
    package static func exit(_ status: Int32) -> Never {
        Glibc.exit(status)
    }

    /// Writes `text` to standard error, unbuffered (a message before an exit; a failure has nowhere to go).
    package static func writeStandardError(_ text: String) {
        writeBestEffort(2, text)
    }

    /// Writes `text` to standard output, unbuffered, as a daemon's one-off line (`… ready …`): a closed or full
    /// stdout loses the line and never ends the process.
    package static func writeStandardOutput(_ text: String) {
        writeBestEffort(1, text)
    }

    private static func writeBestEffort(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { raw in retrying { Glibc.write(fd, raw.baseAddress, raw.count) } }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Whether `fd` is a terminal (`isatty(3)`).
    package static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// The `errno` the calling thread holds now: for a C library that reports a failed system call through it (OpenSSL's
    /// `SSL_ERROR_SYSCALL`), read at once after that library's call.
    package static var currentErrno: Int32 { Glibc.errno }

    /// The calling thread's identity (`pthread_self`), to tell whether code runs on a given thread.
    package static var currentThread: UInt { UInt(pthread_self()) }
}
