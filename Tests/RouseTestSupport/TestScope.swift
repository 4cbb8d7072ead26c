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

    /// The variables that tag a process as this scope's.
    public var environment: [String: String] { [Self.variable: id] }

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
