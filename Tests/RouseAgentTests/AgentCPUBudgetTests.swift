import Foundation
import RouseAgent
import RouseAgentCore
import RouseTestSupport
import Testing

/// The background CPU budget in real cgroups (issue 29, throttling): a background handler whose child spins is
/// throttled (its cgroup's quota read back: v1 `cpu.cfs_quota_us`, v2 `cpu.max`), then terminated through the stop
/// path; a background handler under its budget keeps no quota and runs on.
@Suite(
    "Background CPU budget: a spinning background handler is throttled, then terminated", .serialized,
    .stopsWhatItStarts)
struct AgentCPUBudgetTests {
    /// The CPU quota of `pid`'s cgroup in microseconds per 100 ms period (nil: none, "max" / -1; or no file).
    static func quota(_ pid: Int32) -> Int?? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8) else { return nil }
        func read(_ path: String) -> String? {
            (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[1].split(separator: ",").contains("cpu"),
                let value = read("/sys/fs/cgroup/\(fields[1])\(fields[2])/cpu.cfs_quota_us").flatMap({ Int($0) })
            {
                return .some(value < 0 ? nil : value)
            }
            if fields[0] == "0", let value = read("/sys/fs/cgroup\(fields[2])/cpu.max") {
                let quota = value.split(separator: " ").first.map(String.init) ?? ""
                return .some(quota == "max" ? nil : Int(quota))
            }
        }
        return nil
    }

    @Test(.timeLimit(.minutes(2)))
    func aSpinningBackgroundHandlerIsThrottledThenTerminatedAndACalmOneIsLeftAlone() async throws {
        let harness = try await AgentHarness { directory in
            try ["hog", "calm"].map { name in
                var configuration = try AgentHarness.handler(name, mode: "leak", directory: directory) { rules in
                    rules.backgroundCPU = CPUBudget(percent: 10, window: .seconds(2))
                    rules.taskBudget = .seconds(90)
                    rules.terminationGrace = .seconds(1)
                }
                if name == "hog" {
                    // A child that spins, in the handler's cgroups like the handler.
                    configuration.command =
                        ["/bin/sh", "-c", "while :; do :; done & exec \"$@\"", "sh"] + configuration.command
                }
                return configuration
            }
        }
        for name in ["hog", "calm"] { try await harness.push(name, type: "voip") }
        try await eventually("both in the background", timeout: .seconds(30)) {
            let states = await (harness.handlerStatus("hog")?.state, harness.handlerStatus("calm")?.state)
            return states == ("background", "background")
        }
        let hog = try #require(await harness.handlerStatus("hog")?.pid)
        let calm = try #require(await harness.handlerStatus("calm")?.pid)
        // The spinning child the hog started: it goes with the hog (the agent kills what a handler leaves in its
        // cgroup when it exits).
        let children = (try? String(contentsOfFile: "/proc/\(hog)/task/\(hog)/children", encoding: .utf8)) ?? ""
        let spinner = try #require(children.split(separator: " ").compactMap { Int32($0) }.first, "hog has no child")
        #expect(Self.quota(hog) != nil, "hog (pid \(hog)) has no cpu cgroup with a quota file")
        try await eventually("hog throttled at 10 % (10000 µs per 100 ms)", timeout: .seconds(20)) {
            Self.quota(hog) == .some(10_000)
        }
        try await eventually("hog terminated for its budget", timeout: .seconds(30)) {
            await harness.handlerStatus("hog")?.pid != hog
        }
        try await eventually("the hog's spinning child (pid \(spinner)) gone with it", timeout: .seconds(10)) {
            let stat = (try? String(contentsOfFile: "/proc/\(spinner)/stat", encoding: .utf8)) ?? ""
            return stat.isEmpty || stat.contains(") Z ")
        }
        let memory = try #require(await harness.agent.status().memory)
        #expect(
            memory.cpuThrottled == 1 && memory.cpuTerminated == 1,
            "throttled \(memory.cpuThrottled), terminated \(memory.cpuTerminated)")
        #expect(await harness.handlerStatus("calm")?.pid == calm)
        #expect(await harness.handlerStatus("calm")?.state == "background")
        #expect(Self.quota(calm) == .some(nil), "calm got a quota")
    }
}
