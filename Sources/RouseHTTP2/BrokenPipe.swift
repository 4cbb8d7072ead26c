import RouseSystem

/// OpenSSL writes to its socket with `write(2)`, which raises SIGPIPE when the peer has gone (a TCP reset,
/// a server closing mid-write). The kernel turns that signal off once, process-wide, before the first TLS
/// connection, so a vanished peer is an `EPIPE` error instead of the end of the process.
enum BrokenPipe {
    static let ignored: Void = {
        Sys.ignoreBrokenPipe()
    }()
}
