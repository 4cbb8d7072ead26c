/// A failure of the test plumbing, or why an integration test could not run, with its reason. Thrown, never a
/// skip: CI runs the tests as root with everything they need installed.
public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
    public init(description: String) { self.description = description }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes (then fails with `what`). For what no event
/// tells the test about (another process's state, a file another process writes); where an event or a manual clock
/// exists, wait on that instead.
public func eventually(
    _ what: String, timeout: Duration = .seconds(10), _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    // Once more at the deadline: a test process starved past it (a loaded machine) still sees what happened.
    if try await condition() { return }
    throw FixtureError("timed out after \(timeout) waiting for: \(what)")
}
