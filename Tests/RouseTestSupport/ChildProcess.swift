import CRouseShim
import Foundation
import Synchronization

/// Runs external programs (curl, nghttp, h2load, ip) for tests, with a deadline.
public enum ChildProcess {
    /// What a finished program left.
    public struct Output: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
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
    ///
    /// posix_spawn, not `Foundation.Process`: Swift 6.3.1's `Process.run` can SIGSEGV while it closes the
    /// inherited descriptors (swift-corelibs-foundation PR #5472). The child gets pipes as fds 0-2, every other
    /// descriptor closed, its own process group. `status` is the exit code, or 128 + the signal.
    public static func run(
        _ path: String, _ arguments: [String], stdin: Data? = nil, timeout: Duration = .seconds(60)
    ) async throws -> Output {
        try require(path)
        let input = try makePipe()
        let output = try makePipe()
        let errors = try makePipe()
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let rc = withCStrings([path] + arguments) { argv in
            withCStrings(environment) { envp in
                rouse_spawn_piped(path, argv, envp, input.read, output.write, errors.write, &pid)
            }
        }
        for fd in [input.read, output.write, errors.write] { close(fd) }
        guard rc == 0 else {
            for fd in [input.write, output.read, errors.read] { close(fd) }
            throw Failure(description: "cannot start \(path): \(String(cString: strerror(rc)))")
        }
        let outData = DataCollector(FileHandle(fileDescriptor: output.read, closeOnDealloc: true))
        let errData = DataCollector(FileHandle(fileDescriptor: errors.read, closeOnDealloc: true))
        let writer = FileHandle(fileDescriptor: input.write, closeOnDealloc: true)
        Thread.detachNewThread {
            // A child that never reads its stdin must not block the test: written on a thread.
            if let stdin { try? writer.write(contentsOf: stdin) }
            try? writer.close()
        }
        let child = pid
        let timedOut = Flag()
        let killer = Task {
            try await Task.sleep(for: timeout)
            timedOut.set()
            kill(-child, SIGKILL)
            kill(child, SIGKILL)
        }
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            Thread.detachNewThread {
                var raw: Int32 = 0
                while waitpid(child, &raw, 0) < 0 && errno == EINTR {}
                // WIFEXITED / WEXITSTATUS / WTERMSIG, spelled out (the macros do not import).
                let signal = raw & 0x7f
                continuation.resume(returning: signal == 0 ? (raw >> 8) & 0xff : 128 + signal)
            }
        }
        killer.cancel()
        let stdout = await outData.result()
        let stderr = await errData.result()
        if timedOut.isSet {
            throw Failure(description: "\(path) \(arguments.joined(separator: " ")) timed out after \(timeout)")
        }
        return Output(
            status: status, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
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

    func result() async -> Data {
        await withCheckedContinuation { c in
            DispatchQueue.global().async { [self] in
                done.wait()
                c.resume(returning: data)
            }
        }
    }
}
