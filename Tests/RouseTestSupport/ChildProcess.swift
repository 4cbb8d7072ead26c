import Foundation

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

    /// Runs `path` with `arguments` and waits for it, killing it after `timeout`.
    public static func run(
        _ path: String, _ arguments: [String], stdin: Data? = nil, timeout: Duration = .seconds(60)
    ) async throws -> Output {
        try require(path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        let outData = DataCollector(out.fileHandleForReading)
        let errData = DataCollector(err.fileHandleForReading)
        let finished = AsyncStream<Int32>.makeStream()
        process.terminationHandler = { p in
            finished.continuation.yield(p.terminationStatus)
            finished.continuation.finish()
        }
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try? input.fileHandleForWriting.close()
        let pid = process.processIdentifier
        let killer = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGKILL)
        }
        var status: Int32 = -1
        for await s in finished.stream { status = s }
        killer.cancel()
        let stdout = await outData.result()
        let stderr = await errData.result()
        if status == SIGKILL && process.terminationReason == .uncaughtSignal {
            throw Failure(description: "\(path) \(arguments.joined(separator: " ")) timed out after \(timeout)")
        }
        return Output(
            status: status, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }
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
