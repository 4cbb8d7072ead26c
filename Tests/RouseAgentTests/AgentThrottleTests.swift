import Foundation
import RouseAgent
import RouseTestSupport
import Testing

/// CPU weights follow handlers' states in real cgroups (issue 29, throttling): a foreground handler and one in a call
/// keep the default weight, a running background handler gets half, a suspended one a tenth; v2 `cpu.weight` where
/// the cpu controller reaches the handlers' cgroups, else `cpu.shares` of their groups in the v1 `cpu` hierarchy; I/O
/// weights alike (v2 `io.weight`, else `blkio.bfq.weight` of their groups in the v1 `blkio` hierarchy).
@Suite(
    "CPU weights by state: background and suspended handlers below foreground ones and calls", .serialized,
    .stopsWhatItStarts)
struct AgentThrottleTests {
    /// The weight of `pid`'s cpu cgroup on the v2 scale (v1 `cpu.shares` converted: 1024 is 100); nil without one.
    static func weight(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8) else { return nil }
        func read(_ path: String) -> Int? {
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[1].split(separator: ",").contains("cpu"),
                let shares = read("/sys/fs/cgroup/\(fields[1])\(fields[2])/cpu.shares")
            {
                return shares * 100 / 1024
            }
            if fields[0] == "0", let weight = read("/sys/fs/cgroup\(fields[2])/cpu.weight") { return weight }
        }
        return nil
    }

    /// The I/O weight of `pid`'s blkio (v1) or io (v2) cgroup: BFQ's weight, else CFQ's `blkio.weight`, else v2
    /// `io.weight`'s default; nil without one.
    static func ioWeight(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8) else { return nil }
        func read(_ path: String) -> Int? {
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
                Int($0.split(separator: "\n").first?.split(separator: " ").last ?? "")
            }
        }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let directory =
                fields[0] == "0" ? "/sys/fs/cgroup\(fields[2])" : "/sys/fs/cgroup/\(fields[1])\(fields[2])"
            guard fields[1].split(separator: ",").contains("blkio") || fields[0] == "0" else { continue }
            for file in ["blkio.bfq.weight", "blkio.weight", "io.bfq.weight", "io.weight"] {
                if let weight = read(directory + "/" + file) { return weight }
            }
        }
        return nil
    }

    @Test(.timeLimit(.minutes(2)))
    func backgroundAndSuspendedHandlersWeighLessThanForegroundOnesAndCalls() async throws {
        let harness = try await AgentHarness { directory in
            // Four launches at once on a loaded machine: a report may take longer than the harness's 1 s VoIP
            // deadline, and a missed one kills its handler (a strike), which is not this test's subject.
            try [("front", "foreground"), ("call", "keepcall"), ("busy", "leak"), ("idle", "report")].map {
                try AgentHarness.handler($0.0, mode: $0.1, directory: directory) { $0.voipDeadline = .seconds(20) }
            }
        }
        for name in ["front", "call", "busy", "idle"] { try await harness.push(name, type: "voip") }
        do {
            try await eventually(
                "front active, call in its call, busy in the background, idle frozen", timeout: .seconds(30)
            ) {
                let states = await (
                    harness.handlerStatus("front")?.state, harness.handlerStatus("call")?.holdsAudio,
                    harness.handlerStatus("busy")?.state, harness.handlerStatus("idle")?.state
                )
                return states == ("active", true, "background", "suspended")
            }
        } catch {
            // Which handler did not get there, and what the agent says of each (a timeout alone tells nothing).
            var seen: [String] = []
            for name in ["front", "call", "busy", "idle"] {
                let status = await harness.handlerStatus(name)
                seen.append(
                    "\(name): state \(status?.state ?? "-"), pid \(status?.pid.map(String.init) ?? "-"), "
                        + "holdsAudio \(status.map { String($0.holdsAudio) } ?? "-")")
            }
            Issue.record("states at the timeout: \(seen.joined(separator: "; ")); \(await harness.diagnosis("idle"))")
            throw error
        }
        var weights: [String: Int] = [:]
        for name in ["front", "call", "busy", "idle"] {
            let pid = try #require(await harness.handlerStatus(name)?.pid)
            let weight = try #require(Self.weight(pid), "\(name) (pid \(pid)) has no cpu cgroup")
            weights[name] = weight
        }
        #expect(weights == ["front": 100, "call": 100, "busy": 50, "idle": 9], "weights \(weights)")
        // I/O weights follow the same states (v1 `blkio.bfq.weight` or v2 `io.weight`; BFQ's scale is CPU's).
        var ioWeights: [String: Int] = [:]
        for name in ["front", "call", "busy", "idle"] {
            let pid = try #require(await harness.handlerStatus(name)?.pid)
            let weight = try #require(Self.ioWeight(pid), "\(name) (pid \(pid)) has no blkio or io cgroup")
            ioWeights[name] = weight
        }
        #expect(ioWeights == ["front": 100, "call": 100, "busy": 50, "idle": 10], "I/O weights \(ioWeights)")
    }
}
