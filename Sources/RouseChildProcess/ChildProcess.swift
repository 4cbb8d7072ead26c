import Foundation
import RouseSystem

/// Runs other programs for the tests and for rouse-bench (curl, nghttpd, h2load, ip, openssl and the package's
/// own products): to completion with ``run(_:_:stdin:timeout:)`` or ``runSync(_:_:environment:)``, or as a
/// long-running ``RunningChild`` with ``start(_:_:environment:stdout:stderr:onStdoutLine:)``.
///
/// posix_spawn, not `Foundation.Process`: Swift 6.3.1's `Process.run` can SIGSEGV while it closes the inherited
/// descriptors (swift-corelibs-foundation PR #5472). Every child gets fds 0-2 from us and every other descriptor
/// closed, its own process group, default signal dispositions and an empty signal mask.
package enum ChildProcess {
    /// What a finished program left.
    package struct Output: Sendable {
        /// The exit code, or 128 + the signal that ended it.
        package let status: Int32
        package let stdout: String
        package let stderr: String
        /// The signal that ended it (nil: it exited).
        package let signal: Int32?

        init(raw: Int32, stdout: [UInt8], stderr: [UInt8]) {
            (status, signal) = ChildProcess.decode(raw)
            self.stdout = String(decoding: stdout, as: UTF8.self)
            self.stderr = String(decoding: stderr, as: UTF8.self)
        }
    }

    /// A program could not be run, or ran out of time.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String

        package init(description: String) { self.description = description }

        /// `body`'s `SystemError` as a failure of the same description.
        static func system<T>(_ body: @autoclosure () throws(SystemError) -> T) throws(Failure) -> T {
            do { return try body() } catch { throw Failure(description: "\(error)") }
        }
    }

    /// Where a started child's stdout or stderr goes.
    package enum Sink: Sendable {
        /// `/dev/null`.
        case discard
        /// Our own stdout or stderr (a benchmark shows its servers' warnings).
        case inherit
        /// A file, created or truncated (a server's log, read after a failure).
        case file(String)
        /// A pipe read line by line on a thread of its own (``RunningChild/lines``): stdout only.
        case lines
    }

    /// Variables added to the environment of every child started by this task and its child tasks. A test scope
    /// tags what it starts this way, so that it can find (and kill) even the descendants that left its process
    /// group: rouse-agent hands its environment on to the handlers it launches.
    @TaskLocal package static var addedEnvironment: [String: String] = [:]

    /// Fails with a clear reason when `path` is not an executable (tests never skip silently).
    package static func require(_ path: String) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(description: "\(path) is missing: run deploy/install-deps.sh (it installs the test tools)")
        }
    }

    /// Starts `path` in a process group of its own, stdin `/dev/null`; `environment` replaces ours when given.
    /// `onStdoutLine` (with `stdout: .lines`) sees each line on the reader thread, as soon as it is read.
    package static func start(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil, stdout: Sink = .discard,
        stderr: Sink = .discard, onStdoutLine: (@Sendable (String) -> Void)? = nil
    ) throws -> RunningChild {
        try require(path)
        if case .lines = stderr {
            throw Failure(description: "stderr: .lines: only stdout is read line by line (give .file for stderr)")
        }
        var descriptors = Descriptors()
        defer { descriptors.finish() }
        func open(_ sink: Sink, ours: Int32) throws -> (child: Int32, reader: Int32?) {
            switch sink {
            case .discard: return (try descriptors.theirs(openSink("/dev/null", writing: true)), nil)
            case .inherit:
                return (
                    try descriptors.theirs(Failure.system(try Sys.duplicate(ours))), nil
                )
            case .file(let file): return (try descriptors.theirs(openSink(file, writing: true)), nil)
            case .lines:
                let pipe = try descriptors.pipe(ourEnd: \.read)
                return (pipe.write, pipe.read)
            }
        }
        let input = try descriptors.theirs(openSink("/dev/null", writing: false))
        let out = try open(stdout, ours: 1)
        let err = try open(stderr, ours: 2)
        let pid = try spawn(
            path, arguments, environment: environment, stdin: input, stdout: out.child, stderr: err.child)
        descriptors.spawned = true
        return RunningChild(
            exit: ChildExit(pid: pid), lines: LineReader(descriptor: out.reader, onLine: onStdoutLine))
    }

    /// Runs `path` and blocks until it exits (no deadline: for quick, local programs such as `ip`).
    package static func runSync(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> Output
    {
        let spawned = try spawnPiped(path, arguments, environment: environment)
        Sys.close(spawned.stdin)
        let errors = PipeCollector(spawned.stderr)
        let output = PipeCollector(spawned.stdout)
        let raw = spawned.exit.blockingWait()
        return Output(raw: raw, stdout: output.blockingResult(), stderr: errors.blockingResult())
    }

    /// Runs `path` with `arguments` and waits for it, killing it (its process group) after `timeout`.
    package static func run(
        _ path: String, _ arguments: [String], stdin: Data? = nil, timeout: Duration = .seconds(60)
    ) async throws -> Output {
        let spawned = try spawnPiped(path, arguments, environment: nil)
        let output = PipeCollector(spawned.stdout)
        let errors = PipeCollector(spawned.stderr)
        let writer = spawned.stdin
        let bytes = stdin.map { Array($0) } ?? []
        Sys.detachedThread(name: "rouse-child-in") {
            // A child that never reads its stdin must not block the test: written on a thread.
            _ = Sys.writeToChild(writer, bytes)
            Sys.close(writer)
        }
        let exit = spawned.exit
        let raw: Int32
        do {
            raw = try await exit.wait(timeout: timeout)
        } catch {
            exit.send(SIGKILL, group: true)
            _ = await exit.wait()
            throw Failure(description: "\(path) \(arguments.joined(separator: " ")) timed out after \(timeout)")
        }
        return Output(raw: raw, stdout: await output.result(), stderr: await errors.result())
    }

    /// Kills (SIGKILL) every process whose environment holds `variable=value`, until none is left: the
    /// descendants of a test's children, including those that left their process group. Returns their pids.
    @discardableResult
    package static func killAll(carrying variable: String, _ value: String) -> [pid_t] {
        let entry = Array("\(variable)=\(value)".utf8)
        var killed: [pid_t] = []
        // A process may start another one while we look: look again until a pass finds nothing (bounded).
        for _ in 0..<20 {
            let found = Sys.processes(withEnvironmentEntry: entry)
            if found.isEmpty { break }
            for pid in found where Sys.kill(pid, ifItStillCarries: entry) { killed.append(pid) }
        }
        return killed
    }

    /// The exit code (or 128 + the signal) and the signal, from a raw wait status.
    static func decode(_ raw: Int32) -> (status: Int32, signal: Int32?) {
        // WIFEXITED / WEXITSTATUS / WTERMSIG, spelled out (the macros do not import).
        let signal = raw & 0x7f
        return signal == 0 ? ((raw >> 8) & 0xff, nil) : (128 + signal, signal)
    }

    /// Our environment (or `environment`) with ``addedEnvironment``, as `KEY=value` strings.
    static func variables(_ environment: [String: String]?) -> [String] {
        (environment ?? ProcessInfo.processInfo.environment).merging(addedEnvironment) { $1 }
            .map { "\($0.key)=\($0.value)" }
    }

    /// posix_spawn of `path` in a new process group with `stdin`, `stdout`, `stderr` as its fds 0-2, every other
    /// descriptor closed, default signal dispositions and an empty signal mask.
    private static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String]?, stdin: Int32, stdout: Int32,
        stderr: Int32
    ) throws(Failure) -> pid_t {
        let entries = variables(environment)
        return try Failure.system(
            try Sys.spawnPiped(
                path, arguments: [path] + arguments, environment: entries, stdin: stdin, stdout: stdout,
                stderr: stderr))
    }

    /// A close-on-exec descriptor for `path`: `/dev/null` to read or write, or a log file (created, truncated).
    private static func openSink(_ path: String, writing: Bool) throws(Failure) -> Int32 {
        try Failure.system(try Sys.open(path, writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, mode: 0o644))
    }

    /// A child with pipes as its fds 0-2: our ends of them, and its exit.
    private static func spawnPiped(_ path: String, _ arguments: [String], environment: [String: String]?) throws
        -> (stdin: Int32, stdout: Int32, stderr: Int32, exit: ChildExit)
    {
        try require(path)
        var descriptors = Descriptors()
        defer { descriptors.finish() }
        let input = try descriptors.pipe(ourEnd: \.write)
        let output = try descriptors.pipe(ourEnd: \.read)
        let errors = try descriptors.pipe(ourEnd: \.read)
        let pid = try spawn(
            path, arguments, environment: environment, stdin: input.read, stdout: output.write, stderr: errors.write)
        descriptors.spawned = true
        return (input.write, output.read, errors.read, ChildExit(pid: pid))
    }

    /// The descriptors of a spawn under way: the child's ends are closed once it has them (or the spawn failed);
    /// ours are closed only when the spawn failed, otherwise the caller owns them.
    private struct Descriptors {
        var child: [Int32] = []
        var ours: [Int32] = []
        var spawned = false

        mutating func theirs(_ fd: Int32) -> Int32 {
            child.append(fd)
            return fd
        }

        mutating func pipe(ourEnd: KeyPath<(read: Int32, write: Int32), Int32>) throws -> (read: Int32, write: Int32) {
            let pipe = try Failure.system(try Sys.pipe())
            let mine = pipe[keyPath: ourEnd]
            ours.append(mine)
            child.append(mine == pipe.read ? pipe.write : pipe.read)
            return pipe
        }

        func finish() {
            for fd in child { Sys.close(fd) }
            if !spawned { for fd in ours { Sys.close(fd) } }
        }
    }
}
