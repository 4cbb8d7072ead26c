import Foundation
import RouseChildProcess
import Synchronization
import Testing

/// What one test started, stopped when the test ends, whether it passed or failed.
///
/// A suite with the ``StopsWhatItStarts`` trait (`.stopsWhatItStarts`) runs each test case inside a scope. Every
/// child the test starts through ``ChildProcess`` carries `ROUSE_TEST_SCOPE=<id>` in its environment, and so do
/// that child's own children: rouse-agent hands its environment on to the handlers it launches, which have process
/// groups of their own and outlive an agent killed with SIGKILL (fixtures that run an agent in the test process put
/// ``environment`` into its handlers' environment). When the test ends, the scope runs its teardowns (which may
/// await, as stopping an agent and a gateway in the test process does), then kills whatever still carries its id.
///
/// The scope also turns the event loops' stall detector on in every daemon it starts (`ROUSE_LOOP_STALL_LIMIT_MS`,
/// ``stallLimitMilliseconds`` unless the test command set it) and gives them a report file
/// (`ROUSE_LOOP_STALL_REPORT`): a daemon whose loop was held past the limit writes why there before it ends, and the
/// test fails with that line at its end, although the daemon's standard error may have gone nowhere.
public final class TestScope: Sendable {
    /// The scope of the running test, if its suite has the trait.
    @TaskLocal public static var current: TestScope?

    /// The environment variable that tags what the scope started.
    public static let variable = "ROUSE_TEST_SCOPE"
    /// How long the teardowns may take before the scope kills what is left anyway.
    static let teardownDeadline = Duration.seconds(60)

    /// The tag of this scope's processes.
    public let id = UUID().uuidString
    private let teardowns = Mutex<[@Sendable () async -> Void]>([])

    /// The stall limit the daemons get when the test process has none in its environment: generous, as CI is loaded
    /// (time spent waiting for a CPU is not counted anyway).
    public static let stallLimitMilliseconds = 2000

    /// Where the daemons this scope starts report a stalled event loop (see ``StallDetector`` in RouseEventLoop).
    public var stallReport: String { FileManager.default.temporaryDirectory.path + "/rouse-stall-\(id).log" }

    /// The variables that tag a process as this scope's, with the stall detector's.
    public var environment: [String: String] {
        var variables = [Self.variable: id, "ROUSE_LOOP_STALL_REPORT": stallReport]
        let limit = "ROUSE_LOOP_STALL_LIMIT_MS"
        if ProcessInfo.processInfo.environment[limit] == nil { variables[limit] = "\(Self.stallLimitMilliseconds)" }
        return variables
    }

    /// Runs `teardown` when the test ends, before the remaining processes are killed; the last one registered
    /// runs first.
    public func onEnd(_ teardown: @escaping @Sendable () async -> Void) {
        teardowns.withLock { $0.append(teardown) }
    }

    /// Runs the teardowns (within ``teardownDeadline``), then kills every process that carries the scope's tag.
    func end() async {
        let registered = teardowns.withLock { teardowns in
            defer { teardowns = [] }
            return teardowns
        }
        // Whichever ends first, the teardowns or the deadline, ends the wait (a teardown that hangs is left behind).
        let ended = AsyncStream<Void>.makeStream()
        Task {
            for teardown in registered.reversed() { await teardown() }
            ended.continuation.finish()
        }
        let deadline = Task {
            try? await Task.sleep(for: Self.teardownDeadline)
            ended.continuation.finish()
        }
        for await _ in ended.stream {}
        deadline.cancel()
        ChildProcess.killAll(carrying: Self.variable, id)
        reportStalls()
    }

    /// Fails the test with what the daemons wrote to ``stallReport`` (nothing when no loop stalled), then removes it.
    public func reportStalls() {
        let path = stallReport
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            Issue.record("a daemon's event loop stalled: \(line)")
        }
    }
}

/// Runs each test case of a suite in a ``TestScope`` of its own: what the test starts is stopped when it ends.
public struct StopsWhatItStarts: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let scope = TestScope()
        let environment = ChildProcess.addedEnvironment.merging(scope.environment) { $1 }
        try await TestScope.$current.withValue(scope) {
            try await ChildProcess.$addedEnvironment.withValue(environment) {
                do {
                    try await function()
                } catch {
                    await scope.end()
                    throw error
                }
                await scope.end()
            }
        }
    }
}

extension Trait where Self == StopsWhatItStarts {
    /// Each test case runs in a ``TestScope``: the processes it started (and their descendants) are killed and its
    /// teardowns awaited when it ends, passed or failed.
    public static var stopsWhatItStarts: Self { Self() }
}
