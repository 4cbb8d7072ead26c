import Glibc

/// Runs a short-lived program to completion with `posix_spawn` and pipes: its input written, its output and errors
/// read, its exit status reaped. Not Foundation's `Process`, whose child monitoring runs on libdispatch: in a daemon
/// that must sleep, one libdispatch worker leaves a timer that wakes the process every second (issue 15).
///
/// Errno policy: `EINTR` is retried; a failure to create a pipe or to spawn is thrown with its errno. The pipes are
/// close-on-exec, so only the child gets them (as its fds 0-2).
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
            // pipe2(O_CLOEXEC) is not in Swift's Glibc module (no _GNU_SOURCE): close-on-exec right after.
            guard pipe(&fds) == 0, fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0
            else {
                for pair in pipes { pair.forEach { _ = close($0) } }
                throw Failure(description: "pipe2: \(String(cString: strerror(errno)))")
            }
            pipes.append(fds)
        }
        defer { for pair in pipes { pair.forEach { if $0 >= 0 { _ = close($0) } } } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipes[0][0], 0)
        posix_spawn_file_actions_adddup2(&actions, pipes[1][1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipes[2][1], 2)
        var argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, program, &actions, nil, &argv, environ)
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
