import Foundation
import RouseNetlink
import RouseReachability
import RouseTestSupport
import Testing

/// `rouse reach watch` and the lean `rouse-reach watch` as users run them: a child process read from a
/// pipe, in a namespace.
@Suite("rouse reach watch CLI", .timeLimit(.minutes(1)))
struct WatchCLITests {
    /// The executable and the arguments before the watch options.
    static let watchers = [("rouse", ["reach", "watch"]), ("rouse-reach", ["watch"])]

    @Test(
        "One JSON line per change: pathChanged for a move, changed for a loss, none for unrelated churn",
        arguments: watchers)
    func jsonLines(_ executable: String, _ prefix: [String]) async throws {
        let ns = try NetworkNamespaceFixture("cli")
        defer { ns.delete() }
        try KernelRuleScenarioTests.twoUplinks(ns)
        try ns.ip("route add default via 10.1.0.1")
        let process = try ChildProcess.start(
            try Products.path(executable), prefix + ["--json", "--netns", ns.path, "198.51.100.7"], stdout: .lines,
            stderr: .inherit)
        defer { process.kill() }
        let lines = process.lines

        let initial = try #require(await lines.next())
        #expect(initial.hasPrefix(#"{"event":"changed","kind":"initial","#))
        #expect(initial.contains(#""interface":{"index":"#) && initial.contains(#""name":"veth0""#))
        // Microseconds: six fractional digits in "time", and "timestampUs".
        #expect(
            initial.range(of: #""time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z""#, options: .regularExpression) != nil)
        #expect(initial.range(of: #""timestampUs":\d{16}\}$"#, options: .regularExpression) != nil)

        try ns.ip("route replace default via 10.2.0.1")
        let moved = try #require(await lines.next())
        #expect(moved.hasPrefix(#"{"event":"pathChanged","kind":"path","previous":{"#))
        #expect(moved.contains(#""reason":"egress moved from veth0 to veth2""#))
        #expect(moved.contains(#""source":"10.2.0.2""#))

        // Unrelated churn, then a loss: the next line is the loss.
        try ns.ip("addr add 10.1.0.3/24 dev veth0")
        try ns.ip("route add 192.0.2.0/24 via 10.1.0.1")
        try ns.ip("route del default")
        let lost = try #require(await lines.next())
        #expect(lost.hasPrefix(#"{"event":"changed","kind":"reachability","#))
        #expect(lost.contains(#""status":"unsatisfied(noRoute)""#))

        // Idle: the main thread waits for a signal, the monitor thread in poll(); nothing else runs.
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/task")
        #expect(tasks.count == 2, "threads: \(tasks)")
    }

    @Test("Text lines: a path change says path:, the reason ends the line", arguments: watchers)
    func textLines(_ executable: String, _ prefix: [String]) async throws {
        let ns = try NetworkNamespaceFixture("clit")
        defer { ns.delete() }
        try KernelRuleScenarioTests.twoUplinks(ns)
        try ns.ip("route add default via 10.1.0.1")
        let process = try ChildProcess.start(
            try Products.path(executable), prefix + ["--netns", ns.path, "198.51.100.7"], stdout: .lines,
            stderr: .inherit)
        defer { process.kill() }
        let initial = try #require(await process.lines.next())
        #expect(initial.contains(" 198.51.100.7 satisfied [reachable] via veth0#"))
        try ns.ip("route replace default via 10.2.0.1")
        let moved = try #require(await process.lines.next())
        #expect(moved.contains(" 198.51.100.7 path: satisfied [reachable] via veth2#"))
        #expect(moved.hasSuffix("usable=true — egress moved from veth0 to veth2"))
    }

    @Test("A bad target is a usage error, not a crash", arguments: watchers)
    func badTarget(_ executable: String, _ prefix: [String]) async throws {
        let result = try await ChildProcess.run(try Products.path(executable), prefix + ["not..a..host"])
        // ArgumentParser's usage error in `rouse`, the lean watcher's own in `rouse-reach`.
        #expect(result.status == (executable == "rouse" ? 64 : 2), "\(result.stderr)")
        #expect(result.stderr.contains("not..a..host"))
    }
}
