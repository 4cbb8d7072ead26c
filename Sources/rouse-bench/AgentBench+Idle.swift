import Foundation
import RouseChildProcess

/// The idle part of `rouse-bench agent`: wake-ups per minute, CPU and RSS of an agent and a gateway that
/// have nothing to do, measured after what the benchmark itself caused has settled.
extension AgentBench {
    /// One process's idle figures over a window.
    struct Idle {
        var wakeupsPerMinute: Double
        var cpuMilliseconds: Double
        var rssKiB: Int
        var byThread: [String: Int]

        var summary: String {
            String(format: "%.2f wake-ups/min, CPU %.1f ms, RSS %d KiB", wakeupsPerMinute, cpuMilliseconds, rssKiB)
        }
    }

    /// Waits until `pid` went `quiet` seconds without a wake-up (at most `limit`): the timers the benchmark's own
    /// requests armed (IPC registration sweep, libcurl's, a restarted agent's 10 s restoration grace) fire once
    /// and are gone.
    static func settle(pid: Int32, quiet: Duration = .seconds(12), limit: Duration = .seconds(90)) async throws {
        _ = try await ProcessProbe.settle(pid, quiet: quiet, limit: limit)
    }

    /// Counts wake-ups (voluntary context switches of all threads), CPU time and RSS of each of `pids` over
    /// `seconds`.
    static func measureIdle(pids: [Int32], seconds: Int) async throws -> [Idle] {
        let before = pids.map { (contextSwitches(pid: $0), Bench.cpuSeconds(pid: $0)) }
        try await Task.sleep(for: .seconds(seconds))
        return zip(pids, before).map { pid, start in
            let after = contextSwitches(pid: pid)
            let names = ProcessProbe.threads(pid).mapValues(\.name)
            var byThread: [String: Int] = [:]
            for (task, count) in after where count - (start.0[task] ?? 0) > 0 {
                byThread[names[task] ?? task, default: 0] += count - (start.0[task] ?? 0)
            }
            return Idle(
                wakeupsPerMinute: Double(ProcessProbe.growth(from: start.0, to: after)) * 60 / Double(seconds),
                cpuMilliseconds: (Bench.cpuSeconds(pid: pid) - start.1) * 1000,
                rssKiB: Bench.memoryKiB(pid: pid, field: "VmRSS"), byThread: byThread)
        }
    }

    /// The agent with the network down: the same state (enrolled, tokens), in a network namespace with only `lo`,
    /// so the gateway has no route; measured with `gateway` over the same window (the gateway with that device
    /// offline: no channel). A failure (with the reason) when namespaces cannot be made (not root).
    static func networkDownIdle(
        arguments: [String], gateway: Int32, seconds: Int
    ) async throws -> Result<(agent: Idle, gateway: Idle), GatewayBench.BenchError> {
        let name = "rouse-bench-down-\(getpid())"
        let ip = "/usr/sbin/ip"
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: ip),
            (try? await ChildProcess.run(ip, ["netns", "add", name]).status) == 0
        else { return .failure(.init(description: "needs root and ip(8) for a network namespace")) }
        defer { _ = try? Bench.run(ip, ["netns", "del", name]) }
        _ = try await ChildProcess.run(ip, ["netns", "exec", name, ip, "link", "set", "lo", "up"])
        let agent = try ChildProcess.start(
            ip, ["netns", "exec", name, try GatewayBench.sibling("rouse-agent")] + arguments, stdout: .lines,
            stderr: .inherit)
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        guard await agent.lines.first(timeout: .seconds(20), where: { $0.hasPrefix("rouse-agent ready") }) != nil
        else { return .failure(.init(description: "the agent in the namespace did not start")) }
        try await settle(pid: agent.processIdentifier)
        let idle = try await measureIdle(pids: [agent.processIdentifier, gateway], seconds: seconds)
        return .success((idle[0], idle[1]))
    }
}
