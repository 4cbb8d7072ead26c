import CRouseShim
import Foundation
import Synchronization

/// Runs external programs (curl, nghttp, h2load, ip) for tests, with a deadline.
public enum ChildProcess {
    /// What a finished program left.
    public struct Output: Sendable {
        /// The exit code, or 128 + the signal that ended it.
        public let status: Int32
        public let stdout: String
        public let stderr: String
        /// The signal that ended it (nil: it exited).
        public let signal: Int32?

        init(raw: Int32, stdout: Data, stderr: Data) {
            // WIFEXITED / WEXITSTATUS / WTERMSIG, spelled out (the macros do not import).
            let signal = raw & 0x7f
            self.status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            self.signal = signal == 0 ? nil : signal
            self.stdout = String(decoding: stdout, as: UTF8.self)
            self.stderr = String(decoding: stderr, as: UTF8.self)
        }
    }

    /// A spawned child: its pid and our ends of its pipes.
    struct Spawned {
        let pid: pid_t
        let stdin: FileHandle
        let stdout: Int32
        let stderr: Int32
    }

    /// posix_spawn, not `Foundation.Process`: Swift 6.3.1's `Process.run` can SIGSEGV while it closes the
    /// inherited descriptors (swift-corelibs-foundation PR #5472). The child gets pipes as fds 0-2, every other
    /// descriptor closed, its own process group; `environment` replaces ours when given.
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String]?) throws -> Spawned {
        try require(path)
        let input = try makePipe()
        let output = try makePipe()
        let errors = try makePipe()
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let rc = withCStrings([path] + arguments) { argv in
            withCStrings(variables) { envp in
                rouse_spawn_piped(path, argv, envp, input.read, output.write, errors.write, &pid)
            }
        }
        for fd in [input.read, output.write, errors.write] { close(fd) }
        guard rc == 0 else {
            for fd in [input.write, output.read, errors.read] { close(fd) }
            throw Failure(description: "cannot start \(path): \(String(cString: strerror(rc)))")
        }
        return Spawned(
            pid: pid, stdin: FileHandle(fileDescriptor: input.write, closeOnDealloc: true), stdout: output.read,
            stderr: errors.read)
    }

    /// Blocks until `pid` exits; its raw wait status.
    static func wait(_ pid: pid_t) -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        return raw
    }

    /// Runs `path` and blocks until it exits (no deadline: for quick, local programs such as `ip`).
    public static func runSync(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> Output
    {
        let child = try spawn(path, arguments, environment: environment)
        try? child.stdin.close()
        let errors = DataCollector(FileHandle(fileDescriptor: child.stderr, closeOnDealloc: true))
        let stdout = FileHandle(fileDescriptor: child.stdout, closeOnDealloc: true).readDataToEndOfFile()
        let raw = wait(child.pid)
        return Output(raw: raw, stdout: stdout, stderr: errors.blockingResult())
    }

    /// A program could not be run, or ran out of time.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Fails with a clear reason when `path` is not an executable (tests never skip silently).
    public static func require(_ path: String) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(description: "\(path) is missing: run deploy/install-deps.sh (it installs the test tools)")
        }
    }

    /// Runs `path` with `arguments` and waits for it, killing it (its process group) after `timeout`.
    public static func run(
        _ path: String, _ arguments: [String], stdin: Data? = nil, timeout: Duration = .seconds(60)
    ) async throws -> Output {
        let spawned = try spawn(path, arguments, environment: nil)
        let outData = DataCollector(FileHandle(fileDescriptor: spawned.stdout, closeOnDealloc: true))
        let errData = DataCollector(FileHandle(fileDescriptor: spawned.stderr, closeOnDealloc: true))
        let writer = spawned.stdin
        Thread.detachNewThread {
            // A child that never reads its stdin must not block the test: written on a thread.
            if let stdin { try? writer.write(contentsOf: stdin) }
            try? writer.close()
        }
        let pid = spawned.pid
        let child = pid
        let timedOut = Flag()
        let killer = Task {
            try await Task.sleep(for: timeout)
            timedOut.set()
            kill(-child, SIGKILL)
            kill(child, SIGKILL)
        }
        let raw = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            Thread.detachNewThread { continuation.resume(returning: wait(child)) }
        }
        killer.cancel()
        let stdout = await outData.result()
        let stderr = await errData.result()
        if timedOut.isSet {
            throw Failure(description: "\(path) \(arguments.joined(separator: " ")) timed out after \(timeout)")
        }
        return Output(raw: raw, stdout: stdout, stderr: stderr)
    }

    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard rouse_pipe_cloexec(&fds) == 0 else {
            throw Failure(description: "pipe2: \(String(cString: strerror(errno)))")
        }
        return (fds[0], fds[1])
    }

    /// `body` with `strings` as a NULL-terminated C array.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}

/// Set once, read from another thread.
final class Flag: Sendable {
    private let state = Mutex(false)
    func set() { state.withLock { $0 = true } }
    var isSet: Bool { state.withLock { $0 } }
}

/// Reads a pipe to its end on a background thread.
/// `@unchecked Sendable`: `data` is written once by the reader thread, and read only after `done` is signalled.
final class DataCollector: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    /// Waits on this thread (for synchronous callers).
    func blockingResult() -> Data {
        done.wait()
        done.signal()
        return data
    }

    func result() async -> Data {
        await withCheckedContinuation { c in
            DispatchQueue.global().async { [self] in
                done.wait()
                c.resume(returning: data)
            }
        }
    }
}
