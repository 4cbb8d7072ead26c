import Foundation
import Glibc
import RouseAgent
import RouseClock
import RouseSystem
import RouseTestSupport
import Testing

/// Time changes (issue 29) with real handler processes, a real kernel clock step and a real inotify watch.
///
/// A clock step is seen by every process of the machine that watches for one: every agent of the other suites would
/// wake for it and tell its handlers (a wake-up the idle tests count, a `timeChanged` line their logs do not expect).
/// So the test command runs this suite alone, in a process of its own (`deploy/test.sh`, stage `agent-clock-tests`),
/// and the agent stage skips it; run it alone too (`swift test --filter AgentClockStepTests`).
@Suite(
    "rouse-agent: timeChanged on real clock steps (run alone)", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3))
)
struct AgentClockStepTests {
    /// Sets the wall clock to the value it has (a step of microseconds, harmless to the machine): the kernel reports it as
    /// a set (TFD_TIMER_CANCEL_ON_SET's ECANCELED), as it does any `clock_settime`.
    static func stepTheClockByNothing() throws {
        try Sys.setRealtimeClock(unixMicroseconds: SystemClock().wallMicroseconds)
    }

    @Test func aRealClockStepReachesARunningHandler() async throws {
        let harness = try await AgentHarness { try [AgentLifecycleNoticeTests.voip($0, grace: 1)] }
        _ = try await AgentLifecycleNoticeTests.launched(harness)
        try Self.stepTheClockByNothing()
        try await harness.waitForLine("voip", "timeChanged clockStep=true timeZone=false")
    }

    @Test func aFrozenHandlerGetsOneNoticeForEverythingThatChangedWhileItSlept() async throws {
        let harness = try await AgentHarness(
            handlers: { try [AgentLifecycleNoticeTests.voip($0, grace: 1, suspendAfter: .milliseconds(300))] },
            configure: { directory, configuration in
                try FileManager.default.createDirectory(atPath: directory + "/tz", withIntermediateDirectories: true)
                configuration.timeZonePath = directory + "/tz/localtime"
            })
        _ = try await AgentLifecycleNoticeTests.launched(harness)
        try await eventually("suspended") { await harness.handlerStatus("voip")?.state == "suspended" }
        let before = await harness.agent.timeChanges
        try Self.stepTheClockByNothing()
        try await eventually("first step seen") { await harness.agent.timeChanges > before }
        try Self.stepTheClockByNothing()
        // The time zone: its link replaced (a rename into the watched directory, as timedatectl does).
        let zone = harness.directory + "/tz/localtime"
        _ = FileManager.default.createFile(atPath: zone + ".new", contents: Data("UTC0\n".utf8))
        #expect(rename(zone + ".new", zone) == 0)
        try await eventually("three changes seen") { await harness.agent.timeChanges >= before + 3 }
        #expect(!harness.log("voip").contains { $0.hasPrefix("timeChanged") })
        // The wake: one notice, the net of both kinds.
        try await harness.push("voip", type: "voip", payload: #"{"n":2}"#)
        try await harness.waitForLine("voip", "timeChanged clockStep=true timeZone=true")
        try await harness.waitForLine("voip", "reported id=", count: 2)
        #expect(harness.log("voip").filter { $0.hasPrefix("timeChanged") }.count == 1)
    }
}
