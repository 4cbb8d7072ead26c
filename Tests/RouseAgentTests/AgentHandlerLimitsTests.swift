import Foundation
import RouseAgent
import RouseChildProcess
import RouseTestSupport
import Synchronization
import Testing

/// `[limits] tasks-max` and `memory-max-mib` hold for real handlers: in their cgroup v2 directory where the pids and
/// memory controllers reach it, else in groups of their own in the cgroup v1 `pids` and `memory` hierarchies (a hybrid
/// host). A host with neither fails these tests with the reason the agent gives (status `limitsNote`).
@Suite("Handler limits: tasks-max and memory-max-mib", .serialized, .stopsWhatItStarts)
struct AgentHandlerLimitsTests {
    static let python = "/usr/bin/python3"

    /// Starts 30 `sleep`s in the background, writes how many started into `argv[1]`, stops them, then renames the
    /// file into place (its presence means the sleeps are gone).
    static let forker = """
        import os, subprocess, sys
        started = []
        for _ in range(30):
            try:
                started.append(subprocess.Popen(["/bin/sleep", "60"]))
            except OSError:
                pass
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(str(len(started)))
        for p in started:
            p.kill()
        for p in started:
            p.wait()
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        """

    /// A handler with `tasks-max = 8` starts fewer than 9 of 30 background processes (fork fails with EAGAIN); one
    /// without the limit starts all 30.
    @Test(.timeLimit(.minutes(2)))
    func tasksMaxBoundsTheProcessesAHandlerStarts() async throws {
        try ChildProcess.require(Self.python)
        let directory = Mutex("")
        let harness = try await AgentHarness { path in
            directory.withLock { $0 = path }
            var limited = Self.handler("limited", [Self.python, "-c", Self.forker, path + "/limited.count"])
            limited.tasksMax = 8
            return [limited, Self.handler("free", [Self.python, "-c", Self.forker, path + "/free.count"])]
        }
        let (mechanism, note) = try await Self.limits(harness)
        #expect(mechanism == "cgroup-v2" || mechanism == "cgroup-v1", "limits cannot be applied here: \(note)")
        let path = directory.withLock { $0 }
        try await harness.push("limited", type: "voip")
        try await harness.push("free", type: "voip")
        let limited = try await Self.result(path + "/limited.count")
        let free = try await Self.result(path + "/free.count")
        #expect(limited < 9, "started \(limited) of 30 with tasks-max = 8 (limits \(mechanism): \(note))")
        #expect(free == 30, "started \(free) of 30 without the limit")
    }

    /// A handler with `memory-max-mib = 32` that allocates 200 MiB is OOM-killed inside its group (the allocating
    /// process ends with SIGKILL: its shell sees 137); the agent answers and another handler then allocates the same
    /// 200 MiB without the limit and completes.
    @Test(.timeLimit(.minutes(2)))
    func memoryMaxOOMKillsTheHandlerAloneInItsGroup() async throws {
        try ChildProcess.require(Self.python)
        let directory = Mutex("")
        let harness = try await AgentHarness { path in
            directory.withLock { $0 = path }
            func allocating(_ name: String) -> [String] {
                let result = path + "/" + name + ".status"
                let script =
                    "\(Self.python) -c 'b = b\"x\" * (200 * 1024 * 1024)'; "
                    + "echo $? > \(result).tmp; /bin/mv \(result).tmp \(result)"
                return ["/bin/sh", "-c", script]
            }
            var hog = Self.handler("hog", allocating("hog"))
            hog.memoryMaxBytes = 32 << 20
            return [hog, Self.handler("free", allocating("free"))]
        }
        let (mechanism, note) = try await Self.limits(harness)
        #expect(mechanism == "cgroup-v2" || mechanism == "cgroup-v1", "limits cannot be applied here: \(note)")
        let path = directory.withLock { $0 }
        try await harness.push("hog", type: "voip")
        let hog = try await Self.result(path + "/hog.status")
        #expect(
            hog == 128 + 9, "exit \(hog) allocating 200 MiB with memory-max-mib = 32 (limits \(mechanism): \(note))")
        // The agent lives on and launches the next handler, which allocates as much unhindered.
        #expect(await harness.agent.status().channel == "open")
        try await harness.push("free", type: "voip")
        let free = try await Self.result(path + "/free.status")
        #expect(free == 0, "exit \(free) allocating 200 MiB without the limit")
    }

    static func handler(_ name: String, _ command: [String]) -> HandlerConfiguration {
        HandlerConfiguration(
            name: name, topic: "com.example.\(name)", command: command, pushTypes: ["voip"], allowRoot: true)
    }

    /// The status document's `limits` and `limitsNote` (read from its JSON: absent on an agent without them).
    static func limits(_ harness: AgentHarness) async throws -> (String, String) {
        let data = try JSONEncoder().encode(await harness.agent.status())
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        return (
            object["limits"] as? String ?? "absent from status",
            object["limitsNote"] as? String ?? "the agent reports no limits mechanism"
        )
    }

    /// The number a handler wrote into `path`, once it is there.
    static func result(_ path: String) async throws -> Int {
        try await eventually("\(path) written by the handler", timeout: .seconds(60)) {
            FileManager.default.fileExists(atPath: path)
        }
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let value = Int(text) else { throw FixtureError("\(path): '\(text)'") }
        return value
    }
}
