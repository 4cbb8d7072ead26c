import Foundation
import RouseTestSupport
import Testing

/// The tests' side of the stall detector: every process a test starts gets the detector's limit and the test's report
/// file in its environment, and a line in that file fails the test.
@Suite("Test scope: the daemons' stall detector", .stopsWhatItStarts)
struct StallReportHarnessTests {
    /// A child started in a test's scope has `ROUSE_LOOP_STALL_LIMIT_MS` (the test command's, or the scope's 2000)
    /// and `ROUSE_LOOP_STALL_REPORT` naming the scope's file in its environment.
    @Test func aChildGetsTheLimitAndTheReportFile() async throws {
        let scope = try #require(TestScope.current)
        let output = try await ChildProcess.run("/usr/bin/env", [])
        let variables = output.stdout.split(separator: "\n").map(String.init)
        #expect(variables.contains("ROUSE_LOOP_STALL_REPORT=\(scope.stallReport)"))
        let limit = variables.first { $0.hasPrefix("ROUSE_LOOP_STALL_LIMIT_MS=") }?.split(separator: "=").last
        #expect(limit.flatMap { Int($0) }.map { $0 > 0 } == true, "no stall limit: \(variables)")
    }

    /// A line in the report file (what a stalled daemon writes before it ends) is recorded as an issue of the test,
    /// and the file is gone afterwards.
    @Test func aReportedStallFailsTheTest() throws {
        let scope = try #require(TestScope.current)
        let line = "event loop rouse-h2-0: one callback held the loop 2500 ms (limit 2000 ms)"
        try (line + "\n").write(toFile: scope.stallReport, atomically: false, encoding: .utf8)
        // Not a skipped test: the issue recorded is what is tested. `withKnownIssue` (not intermittent) fails the
        // test when the body records no matching issue, so this fails if `reportStalls` stops failing tests.
        withKnownIssue {
            scope.reportStalls()
        } matching: { issue in
            issue.description.contains("a daemon's event loop stalled: \(line)")
        }
        #expect(!FileManager.default.fileExists(atPath: scope.stallReport))
    }
}
