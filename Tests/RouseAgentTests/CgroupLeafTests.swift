import Foundation
import RouseChildProcess
import Testing

@testable import RouseAgent

/// The "no internal process" rule of cgroup v2 on real cgroups: an agent whose own cgroup holds it (its systemd unit's,
/// `Delegate=yes`) moves into a leaf so that the handlers' cgroups can get controllers (`pids`, `memory` for the
/// limits). A `sleep` plays the agent; the controller is any the v2 hierarchy offers (this VM's has only `hugetlb`:
/// pids and memory are bound to cgroup v1 here), which follows the same rule.
@Suite("cgroup v2: the agent moves into a leaf to hand controllers to its handlers")
struct CgroupLeafTests {
    @Test func aCgroupHoldingTheAgentGetsControllersForItsHandlersOnceTheAgentIsInALeaf() async throws {
        guard getuid() == 0 else {
            Issue.record("needs root to make cgroups (CI runs as root)")
            return
        }
        guard let (mount, _) = ProcessControl.cgroupV2Location() else {
            Issue.record("no cgroup v2 hierarchy mounted")
            return
        }
        let offered = (try String(contentsOfFile: mount + "/cgroup.controllers", encoding: .utf8))
            .split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard let controller = offered.first(where: { $0 == "pids" }) ?? offered.first else {
            Issue.record("the cgroup v2 root at \(mount) offers no controller")
            return
        }
        // The root hands it down (the root is exempt from the rule); undone at the end if this test enabled it.
        let rootControl = mount + "/cgroup.subtree_control"
        let enabledHere = !(try String(contentsOfFile: rootControl, encoding: .utf8)).contains(controller)
        if enabledHere { try "+\(controller)".write(toFile: rootControl, atomically: false, encoding: .utf8) }
        let unit = mount + "/rouse-leaf-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let base = unit + "/rouse-agent-1-test"
        let agent = try ChildProcess.start("/bin/sleep", ["60"])
        defer {
            agent.terminate()
            agent.waitUntilExit()
            for directory in [base, unit + "/" + ProcessControl.agentLeaf, unit] { rmdir(directory) }
            if enabledHere { try? "-\(controller)".write(toFile: rootControl, atomically: false, encoding: .utf8) }
        }
        try FileManager.default.createDirectory(atPath: unit, withIntermediateDirectories: false)
        try "\(agent.processIdentifier)\n".write(toFile: unit + "/cgroup.procs", atomically: false, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: false)

        let problem = ProcessControl.enableControllers([controller], below: base, moving: agent.processIdentifier)

        #expect(problem == nil, "\(problem ?? "")")
        let controllers = (try? String(contentsOfFile: base + "/cgroup.controllers", encoding: .utf8)) ?? ""
        #expect(controllers.contains(controller), "\(base)/cgroup.controllers: \(controllers)")
        let moved = (try? String(contentsOfFile: "/proc/\(agent.processIdentifier)/cgroup", encoding: .utf8)) ?? ""
        let leaf = String(unit.dropFirst(mount.count)) + "/" + ProcessControl.agentLeaf
        #expect(moved.contains("0::\(leaf)\n"), "the agent's cgroup: \(moved)")
        // Only the agent moved, and the unit's cgroup now holds no process.
        let left = (try? String(contentsOfFile: unit + "/cgroup.procs", encoding: .utf8)) ?? "?"
        #expect(left.isEmpty, "still in \(unit): \(left)")
    }
}
