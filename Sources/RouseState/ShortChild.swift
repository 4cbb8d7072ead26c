import RouseSystem

/// Runs a short-lived program to completion with `posix_spawn` and pipes: its input written, its output and errors
/// read, its exit status reaped. Not Foundation's `Process`, whose child monitoring runs on libdispatch: in a daemon
/// that must sleep, one libdispatch worker leaves a timer that wakes the process every second.
///
/// Through RouseSystem's syscall layer (its errno policy): a failure to create a pipe or to spawn is thrown with its
/// errno. The pipes are created close-on-exec and the child is spawned by `Sys.spawnPiped` (shared with
/// RouseChildProcess): it gets them as its fds 0-2 and no other descriptor of the caller.
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
        defer { for pair in pipes { pair.forEach { if $0 >= 0 { Sys.close($0) } } } }
        var pid: Int32 = 0
        do throws(SystemError) {
            for _ in 0..<3 {
                // Close-on-exec from the start (pipe2): a child another thread spawns meanwhile inherits neither end.
                let pipe = try Sys.pipe()
                pipes.append([pipe.read, pipe.write])
            }
            // The pipes as fds 0-2, every other descriptor closed, default signal dispositions, an empty signal mask.
            pid = try Sys.spawnPiped(
                program, arguments: [program] + arguments, environment: nil, stdin: pipes[0][0], stdout: pipes[1][1],
                stderr: pipes[2][1])
        } catch {
            throw Failure(description: "\(error.call)\(error.path.map { " \($0)" } ?? ""): \(error.code)")
        }
        for (index, end) in [(0, 0), (1, 1), (2, 1)] {
            Sys.close(pipes[index][end])
            pipes[index][end] = -1
        }
        // A reader that went away ends the input (its output still tells what happened).
        _ = try? Sys.writeAll(pipes[0][1], input, path: nil)
        Sys.close(pipes[0][1])
        pipes[0][1] = -1
        let output = readAll(pipes[1][0])
        let errors = readAll(pipes[2][0])
        let status = Sys.reap(pid)
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output, errors)
    }

    private static func readAll(_ fd: Int32) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Sys.readFromChild(fd, into: $0) }
            if count <= 0 { return result }
            result += buffer.prefix(count)
        }
    }
}
