import Foundation
import Glibc
import RouseEventLoop
import RouseSystem
import Testing

/// The stall detector's report file: how a daemon whose standard error goes nowhere still tells the test why it ended
/// (the tests' `TestScope` names the file in `ROUSE_LOOP_STALL_REPORT` and fails the test with its lines).
@Suite("EventLoop stall report", .timeLimit(.minutes(1)))
struct StallReportTests {
    /// A callback held past the limit writes the loop's name and the time held to the report file, then ends the
    /// process; a loop whose callbacks stay short writes nothing.
    @Test func aStallIsWrittenToTheReportFile() async throws {
        let path = FileManager.default.temporaryDirectory.path + "/rouse-stall-test-\(UUID().uuidString).log"
        defer { _ = try? Sys.remove(path) }
        await #expect(processExitsWith: .failure) { [path = path as String] in
            setenv("ROUSE_LOOP_STALL_LIMIT_MS", "50", 1)
            setenv("ROUSE_LOOP_STALL_REPORT", path, 1)
            let quiet = try EventLoop(name: "test-quiet")
            quiet.start()
            quiet.execute {}
            quiet.stopAndWait()
            let loop = try EventLoop(name: "test-stall-file")
            loop.start()
            loop.execute { Sys.sleep(seconds: 0.3) }
            // The detector ends the process; if it did not, the stop returns and the exit test fails.
            Sys.sleep(seconds: 2)
            loop.stopAndWait()
        }
        let report = try #require(Sys.readText(path), "no report file")
        #expect(report.contains("event loop test-stall-file: one callback held the loop"))
        #expect(!report.contains("test-quiet"))
    }
}
