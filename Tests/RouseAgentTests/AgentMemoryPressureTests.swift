import Foundation
import Glibc
import RouseAgent
import RouseAgentCore
import RouseChildProcess
import RouseTestSupport
import Testing

/// Memory pressure with real parts: a real PSI trigger (the handlers' cgroup v2 `memory.pressure` where the host
/// has it, else the system's `/proc/pressure/memory`), real pressure (a handler whose `memory-max-mib` group is
/// smaller than the file it reads over and over: every read reclaims and refaults page cache inside its group, and
/// those stalls are memory pressure the kernel counts, in its cgroup and system-wide), real frozen handlers holding
/// real memory, a real call. A host without PSI fails these tests with the agent's reason (status `memory.note`).
@Suite(
    "Memory pressure: real PSI, the frozen and largest first, calls and the agent never", .serialized,
    .stopsWhatItStarts)
struct AgentMemoryPressureTests {
    /// A sensitive trigger (40 ms of stall in 2 s) so that one small thrashing group is enough, without touching the
    /// rest of the machine. A 2 s window: without CAP_SYS_RESOURCE (the test machine's root lacks it) the kernel takes
    /// only multiples of 2 s.
    static func settings() -> MemoryPressureSettings {
        var settings = MemoryPressureSettings()
        settings.trigger = MemoryPressureTrigger(kind: .some, stallMicroseconds: 40_000, windowMicroseconds: 2_000_000)
        settings.persistAfter = .seconds(1)
        return settings
    }

    /// Frozen `big` (200 MiB) and `small` (20 MiB), `call` in a call, and, once they are so, `hog` thrashing its
    /// 48 MiB group: the trigger fires, the running handlers get `memoryWarning`; the pressure persists, so `big`
    /// goes first, then `small`, then the running background `hog` (the stop path), which ends the pressure. `call`
    /// and the agent live on. Status shows each handler's memory on the way.
    @Test(.timeLimit(.minutes(4)))
    func theFrozenLargestHandlerDiesFirstTheCallAndTheAgentSurvive() async throws {
        let harness = try await AgentHarness(
            handlers: { directory in
                let big = try AgentHarness.handler(
                    "big", mode: "report", directory: directory, arguments: ["--allocate-mib", "200"])
                let small = try AgentHarness.handler(
                    "small", mode: "report", directory: directory, arguments: ["--allocate-mib", "20"])
                let call = try AgentHarness.handler("call", mode: "keepcall", directory: directory)
                var hog = try AgentHarness.handler(
                    "hog", mode: "leak", directory: directory, arguments: ["--thrash", directory + "/hog.bin:128"]
                ) { $0.taskBudget = .seconds(900) }
                hog.memoryMaxBytes = 48 << 20
                return [big, small, call, hog]
            },
            configure: { _, configuration in configuration.memoryPressure = Self.settings() })
        let memory = try #require(await harness.agent.status().memory)
        let source = try #require(memory.source, "memory pressure is not watched here: \(memory.note)")
        #expect(memory.terminatedSuspended == 0 && memory.terminatedRunning == 0)

        try await harness.push("big", type: "voip")
        try await harness.push("small", type: "voip")
        try await harness.push("call", type: "voip")
        try await harness.waitForLine("big", "allocated mib=200", timeout: .seconds(30))
        try await eventually("big and small frozen, call in its call", timeout: .seconds(30)) {
            let big = await harness.handlerStatus("big")
            let small = await harness.handlerStatus("small")
            let call = await harness.handlerStatus("call")
            return big?.state == "suspended" && small?.state == "suspended" && call?.holdsAudio == true
        }
        // The status column: each handler's charged memory (its cgroup's).
        let bigBytes = try #require(await harness.handlerStatus("big")?.memoryBytes, "no memory figure for big")
        let smallBytes = try #require(await harness.handlerStatus("small")?.memoryBytes, "no memory figure for small")
        #expect(bigBytes > 200 << 20, "big charges \(bigBytes) bytes")
        #expect(smallBytes > 20 << 20 && smallBytes < 100 << 20, "small charges \(smallBytes) bytes")
        let callPID = try #require(await harness.handlerStatus("call")?.pid)
        let bigPID = try #require(await harness.handlerStatus("big")?.pid)
        // The kernel's OOM order follows the same policy: frozen 500, a call 0 (the test process runs at 0).
        #expect(Self.oomScoreAdjust(bigPID) == 500)
        #expect(Self.oomScoreAdjust(callPID) == 0)

        try await harness.push("hog", type: "voip")
        try await harness.waitForLine("hog", "thrashing", timeout: .seconds(30))
        try await eventually("the hog terminated after big and small (trigger on \(source))", timeout: .seconds(150)) {
            let status = await harness.agent.status().memory
            return (status?.terminatedRunning ?? 0) >= 1
        }
        let after = try #require(await harness.agent.status().memory)
        let order = after.recent.map(\.handler)
        #expect(Array(order.prefix(3)) == ["big", "small", "hog"], "terminated in the order \(after.recent)")
        #expect(after.recent.first?.state == "suspended" && after.recent.dropFirst(2).first?.state == "background")
        #expect(!order.contains("call"))
        #expect(after.episodes >= 1 && after.warningsSent >= 2)
        // The running handlers were warned; the call's handler is alive, in its call; big is gone.
        #expect(harness.log("call").contains { $0.hasPrefix("memoryWarning trigger=some 40000 2000000") })
        #expect(harness.log("hog").contains { $0.hasPrefix("memoryWarning") })
        #expect(kill(callPID, 0) == 0, "the call's handler died")
        #expect(await harness.handlerStatus("call")?.holdsAudio == true)
        try await eventually("big reaped") { kill(bigPID, 0) != 0 }
        #expect(await harness.handlerStatus("big")?.state == "notRunning")
        // The agent lives on: it answers and its channel is open.
        #expect(await harness.agent.status().channel == "open")
    }

    static func oomScoreAdjust(_ pid: Int32) -> Int? {
        (try? String(contentsOfFile: "/proc/\(pid)/oom_score_adj", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}
