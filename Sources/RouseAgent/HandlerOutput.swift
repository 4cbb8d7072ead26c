import FoundationEssentials
import Logging
import RouseClock
import RouseSystem
import Synchronization

/// Where a handler's stdout and stderr go: never the agent's own (a handler could write lines that look like the
/// agent's, or `shutdown()` the agent's journal stream). Under systemd, a journal stream of its own
/// (`/run/systemd/journal/stdout`, identifier `rouse-handler-<name>`: `journalctl -t rouse-handler-NAME`);
/// elsewhere a pipe the agent reads on a thread of its own and logs line by line as metadata (`handler output`,
/// `handler`, `line`), within a budget: lines cut at ``maxLine`` bytes, at most ``linesPerWindow`` lines every
/// ``window`` per handler, the rest counted and dropped (one `handler output dropped` notice per window).
enum HandlerOutput {
    /// The journal's stream socket.
    static let journalSocket = "/run/systemd/journal/stdout"
    static let maxLine = 2048
    static let linesPerWindow = 200
    static let window = Duration.seconds(10)

    /// A descriptor for the child's fds 1 and 2 (the caller closes its copy after the spawn); when neither a journal
    /// stream nor a pipe can be opened, the pipe's error (`EMFILE`: the launch waits the shortage out).
    static func open(handler: String, logger: Logger, journal: String = journalSocket) throws(SystemError) -> Int32 {
        if let fd = journalStream(handler: handler, socket: journal) { return fd }
        let pipe = try Sys.pipe()
        Sys.detachedThread(name: "rouse-agent-output") { relay(pipe.read, handler: handler, logger: logger) }
        return pipe.write
    }

    /// A stream to journald with the handler's identifier (the header of systemd's stdout protocol: identifier,
    /// unit id, priority 6, no level prefix, not forwarded to syslog, kmsg or the console).
    private static func journalStream(handler: String, socket: String) -> Int32? {
        guard (try? Sys.status(socket)) != nil, let fd = try? Sys.connect(unixPath: socket) else { return nil }
        let header = "rouse-handler-\(handler)\n\n6\n0\n0\n0\n0\n"
        do {
            try Sys.sendAll(fd, Array(header.utf8))
            Sys.shutdownRead(fd)
            return fd
        } catch {
            Sys.close(fd)
            return nil
        }
    }

    /// Reads until every writer is gone (the handler and whatever it started), logging within the budget.
    private static func relay(_ fd: Int32, handler: String, logger: Logger) {
        defer { Sys.close(fd) }
        var pending: [UInt8] = []
        let clock = SystemClock()
        var windowStart = clock.now
        var lines = 0
        var dropped = 0
        func emit(_ bytes: ArraySlice<UInt8>) {
            if windowStart.duration(to: clock.now) >= window {
                if dropped > 0 {
                    logger.notice("handler output dropped", metadata: ["handler": "\(handler)", "lines": "\(dropped)"])
                }
                windowStart = clock.now
                (lines, dropped) = (0, 0)
            }
            guard lines < linesPerWindow else {
                dropped += 1
                return
            }
            lines += 1
            let line = String(decoding: bytes.prefix(maxLine), as: UTF8.self)
            logger.info("handler output", metadata: ["handler": "\(handler)", "line": "\(line)"])
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
        defer { buffer.deallocate() }
        while let count = try? Sys.read(fd, into: buffer), count > 0 {
            for byte in buffer[..<count] {
                if byte == 0x0A {
                    emit(pending[...])
                    pending.removeAll(keepingCapacity: true)
                } else if pending.count < maxLine {
                    pending.append(byte)
                }
            }
        }
        if !pending.isEmpty { emit(pending[...]) }
    }
}
