import CRouseSys
import Glibc

/// Runs a short-lived program to completion with `posix_spawn` and pipes: its input written, its output and errors
/// read, its exit status reaped. Not Foundation's `Process`, whose child monitoring runs on libdispatch: in a daemon
/// that must sleep, one libdispatch worker leaves a timer that wakes the process every second.
///
/// Errno policy: `EINTR` is retried; a failure to create a pipe or to spawn is thrown with its errno. The pipes are
/// created close-on-exec (`rouse_pipe_cloexec`) and the child is spawned by `rouse_spawn_piped` (CRouseSys, shared
/// with RouseChildProcess): it gets them as its fds 0-2 and no other descriptor of the caller.
package enum ShortChild {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Runs `program` with `arguments`; returns its exit status (128+signal when killed), output and errors.
    /// Inputs and outputs are expected small (a few KiB): the input is written in full before the outputs are read.
    package static func run(_ program: String, _ arguments: [String], input: [UInt8]) throws(Failure) -> (
        status: Int32, output: [UInt8], errors: [UInt8]
    ) {
        var pipes: [[Int32]] = []
        for _ in 0..<3 {
            var fds: [Int32] = [-1, -1]
            // Close-on-exec from the start (pipe2): a child another thread spawns meanwhile inherits neither end.
            guard rouse_pipe_cloexec(&fds) == 0 else {
                let code = errno
                for pair in pipes { pair.forEach { _ = close($0) } }
                throw Failure(description: "pipe2: \(String(cString: strerror(code)))")
            }
            pipes.append(fds)
        }
        defer { for pair in pipes { pair.forEach { if $0 >= 0 { _ = close($0) } } } }
        var argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        // The pipes as fds 0-2, every other descriptor closed, default signal dispositions, an empty signal mask.
        let rc = rouse_spawn_piped(program, &argv, environ, pipes[0][0], pipes[1][1], pipes[2][1], &pid)
        guard rc == 0 else { throw Failure(description: "posix_spawn \(program): \(String(cString: strerror(rc)))") }
        for (index, end) in [(0, 0), (1, 1), (2, 1)] {
            _ = close(pipes[index][end])
            pipes[index][end] = -1
        }
        var offset = 0
        while offset < input.count {
            let written = input[offset...].withUnsafeBytes { write(pipes[0][1], $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { break }
            offset += written
        }
        _ = close(pipes[0][1])
        pipes[0][1] = -1
        let output = readAll(pipes[1][0])
        let errors = readAll(pipes[2][0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output, errors)
    }

    private static func readAll(_ fd: Int32) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return result }
            result += buffer.prefix(count)
        }
    }
}
