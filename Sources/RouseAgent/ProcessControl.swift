import Glibc
import RouseSystem
import RouseText

/// How handlers are grouped and frozen: a cgroup v2 child of the agent's own cgroup when writable (freeze
/// with `cgroup.freeze`, kill with `cgroup.kill`), else the v1 freezer hierarchy (`freezer.state`), else
/// `SIGSTOP`/`SIGCONT` to the handler's process group. The mechanism in use is logged and shown in status.
package enum SuspendMechanism: String, Sendable, Codable {
    /// cgroup v2 freezer.
    case cgroupV2 = "cgroup-v2"
    /// cgroup v1 freezer.
    case cgroupV1 = "cgroup-v1-freezer"
    /// Signals to the process group.
    case sigstop = "SIGSTOP"
}

/// Picks the mechanism and owns the agent's handler cgroup directories.
struct ProcessControl: Sendable {
    let mechanism: SuspendMechanism
    /// Directory under which each handler gets a child (v2 or v1 freezer), nil for SIGSTOP.
    let base: String?
    /// Why a cgroup mechanism is not in use (for status).
    let note: String
    /// The cgroup2 mount point, when ``base`` is a cgroup v2 directory.
    var mountPoint: String? = nil
    /// Where the handlers' `tasks-max` and `memory-max-mib` are enforced (``findLimits(tag:)``).
    var limits = LimitMechanism.none
    /// Where the limits are written, or why they cannot be (for status and the start log).
    var limitsNote = "not detected"
    /// The agent's directories in the cgroup v1 `pids` and `memory` hierarchies (``LimitMechanism/cgroupV1``).
    var v1Bases: [String] = []
    /// The cpu controller reaches the handlers' cgroup v2 directories (`cpu.weight`: ``findThrottling(tag:)``).
    var cpuV2 = false
    /// The agent's directories in the cgroup v1 `cpu` and `cpuacct` hierarchies (handlers' CPU weights on v1).
    var throttleBases: [String] = []
    /// Where CPU weights are written, or why nowhere.
    var throttleNote = "not detected"
    /// The io controller reaches the handlers' cgroup v2 directories (`io.bfq.weight` or `io.weight`).
    var ioV2 = false
    /// Where I/O weights are written, or why nowhere.
    var ioNote = "not detected"

    /// Whether a process in cgroup v2 `path` (as `/proc/PID/cgroup` names it) is one of our handlers' (a handler
    /// or anything it started: they cannot leave their cgroup without our write access).
    func holds(cgroupPath path: String) -> Bool {
        guard mechanism == .cgroupV2, let base, let mountPoint else { return false }
        return (mountPoint + path).hasPrefix(base + "/")
    }

    /// The handler whose cgroup (or a cgroup below it) is cgroup v2 `path` (as `/proc/PID/cgroup` names it); nil
    /// outside our handlers' cgroups.
    func handlerName(cgroupPath path: String) -> String? {
        guard mechanism == .cgroupV2, let base, let mountPoint else { return nil }
        let full = mountPoint + path
        guard full.hasPrefix(base + "/") else { return nil }
        return full.dropFirst(base.count + 1).split(separator: "/").first.map(String.init)
    }

    /// Detects: `forced` (tests) or the best available; then where the per-handler limits go (``limits``).
    static func detect(forced: SuspendMechanism? = nil) -> ProcessControl {
        // One directory per agent instance (several may share a process, as in the tests).
        let tag = "rouse-agent-\(Sys.processID)-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
        var control = suspension(forced: forced, tag: tag)
        control.findLimits(tag: tag)
        control.findThrottling(tag: tag)
        return control
    }

    private static func suspension(forced: SuspendMechanism?, tag: String) -> ProcessControl {
        if forced == nil || forced == .cgroupV2, let (mount, own) = cgroupV2Location() {
            let parent = mount + (own == "/" ? "" : own)
            let base = parent + "/" + tag
            if (try? Sys.makeDirectory(base, mode: 0o755)) != nil, Sys.writable(base + "/cgroup.procs") {
                return ProcessControl(
                    mechanism: .cgroupV2, base: base, note: "cgroup v2 at \(base)", mountPoint: mount)
            }
        }
        if forced == nil || forced == .cgroupV1 {
            let v1 = "/sys/fs/cgroup/freezer"
            if Sys.writable(v1) {
                let base = v1 + "/" + tag
                if (try? Sys.makeDirectory(base, mode: 0o755)) != nil {
                    return ProcessControl(mechanism: .cgroupV1, base: base, note: "cgroup v2 not writable; v1 freezer")
                }
            }
        }
        return ProcessControl(mechanism: .sigstop, base: nil, note: "no writable cgroup: SIGSTOP/SIGCONT fallback")
    }

    /// Cleans up after agents that died without cleaning up (SIGKILL): their handlers lost their IPC connection
    /// and may sit frozen forever, so they are killed (`cgroup.kill`) and the cgroups removed (a cgroup whose
    /// processes are still dying stays until the next start).
    static func removeStale(in parent: String) {
        for entry in ((try? Sys.directoryEntries(parent)) ?? []) where entry.hasPrefix("rouse-agent-") {
            let pidText = entry.dropFirst("rouse-agent-".count).prefix { $0 != "-" }
            guard let pid = Int32(pidText), !Sys.processExists(pid) else { continue }
            let directory = parent + "/" + entry
            for child in ((try? Sys.directoryEntries(directory)) ?? []) where !child.includes(".") {
                let cgroup = directory + "/" + child
                if Sys.readText(cgroup + "/cgroup.events")?.includes("populated 1") == true {
                    _ = try? Sys.writeFile(cgroup + "/cgroup.kill", "1")
                    for _ in 0..<50
                    where Sys.readText(cgroup + "/cgroup.events")?.includes("populated 1") == true {
                        Sys.pause(milliseconds: 2)
                    }
                }
                Sys.removeDirectory(cgroup)
            }
            Sys.removeDirectory(directory)
        }
    }

    /// Cleans up after dead agents (``removeStale(in:)``) next to our base directory; call after re-attaching
    /// to their handlers (which moves those out of the stale cgroups).
    func removeStaleAgents() {
        for v1 in v1Bases + throttleBases { Self.removeStaleV1(in: Self.parent(of: v1)) }
        guard mechanism == .cgroupV2, let base else { return }
        Self.removeStale(in: Self.parent(of: base))
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[..<slash])
    }

    /// The cgroup2 mount point and the agent's own cgroup path.
    static func cgroupV2Location() -> (String, String)? {
        guard let mounts = Sys.readText("/proc/self/mountinfo"),
            let own = Sys.readText("/proc/self/cgroup")
        else { return nil }
        var mountPoint: String?
        for line in mounts.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard let dash = parts.firstIndex(of: "-"), dash + 1 < parts.count, parts[dash + 1] == "cgroup2",
                parts.count > 4
            else { continue }
            mountPoint = String(parts[4])
            break
        }
        guard let mountPoint,
            let line = own.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return nil }
        return (mountPoint, String(line.dropFirst(3)))
    }

    /// Creates the handler's cgroup (if any) with its limits (``limits``: `pids.max`, `memory.max` in it (cgroup v2),
    /// or groups of its own in the v1 `pids` and `memory` hierarchies) and opens each `cgroup.procs` for the child to
    /// join before it runs (``Sys/spawnHandler``); nil without cgroups. `problems`: limits that could not be written
    /// (the launch goes on; the caller logs them). The caller closes `procs`. A shortage (`EMFILE`, `ENOMEM`) is
    /// thrown, with nothing left open: a handler must not start outside its groups because the agent was short of
    /// descriptors for a moment; the launch is tried again (``Agent/launch(_:reason:)``).
    func prepare(
        handler: String, tasksMax: Int, memoryMaxBytes: Int64
    ) throws(SystemError) -> (directory: String, procs: [Int32], problems: [String])? {
        guard let base else { return nil }
        let directory = base + "/" + handler
        var problems: [String] = []
        var all: [Int32] = []
        do throws(SystemError) {
            do throws(SystemError) {
                try Sys.makeDirectory(directory, mode: 0o755)
                if limits == .cgroupV2 {
                    problems += try Self.writeV2Limits(directory, tasksMax: tasksMax, memoryMaxBytes: memoryMaxBytes)
                }
                all.append(try Sys.open(directory + "/cgroup.procs", O_WRONLY | O_CLOEXEC))
            } catch {
                if error.isShortage { throw error }
                return nil
            }
            if limits == .cgroupV1 {
                let (groups, v1Problems) = try makeV1Groups(
                    handler, tasksMax: tasksMax, memoryMaxBytes: memoryMaxBytes)
                problems += v1Problems
                for group in groups {
                    do throws(SystemError) {
                        all.append(try Sys.open(group + "/cgroup.procs", O_WRONLY | O_CLOEXEC))
                    } catch {
                        if error.isShortage { throw error }
                        problems.append("\(group)/cgroup.procs: \(error)")
                    }
                }
            }
            for group in makeThrottleGroups(handler) {
                do throws(SystemError) {
                    all.append(try Sys.open(group + "/cgroup.procs", O_WRONLY | O_CLOEXEC))
                } catch {
                    if error.isShortage { throw error }
                    problems.append("\(group)/cgroup.procs: \(error)")
                }
            }
        } catch {
            for fd in all { Sys.close(fd) }
            throw error
        }
        return (directory, all, problems)
    }

    /// Creates the handler's cgroup (if any) and moves `pid` into it (and into its v1 `pids` and `memory` groups
    /// with `limits`, cgroup v1 limits: a re-attached handler); returns the directory.
    func place(pid: Int32, handler: String, limits: (tasksMax: Int, memoryMaxBytes: Int64)? = nil) -> String? {
        guard let base else { return nil }
        if let limits, self.limits == .cgroupV1 {
            let groups =
                (try? makeV1Groups(handler, tasksMax: limits.tasksMax, memoryMaxBytes: limits.memoryMaxBytes))?
                .directories ?? []
            for group in groups { _ = try? Sys.writeFile(group + "/cgroup.procs", "\(pid)\n") }
        }
        let directory = base + "/" + handler
        do {
            try Sys.makeDirectory(directory, mode: 0o755)
            try Sys.writeFile(directory + "/cgroup.procs", "\(pid)\n")
            return directory
        } catch {
            return nil
        }
    }

    /// Freezes; returns false when it failed.
    func freeze(cgroup: String?, pgid: Int32) -> Bool {
        switch (mechanism, cgroup) {
        case (.cgroupV2, let directory?):
            return (try? Sys.writeFile(directory + "/cgroup.freeze", "1")) != nil
        case (.cgroupV1, let directory?):
            return (try? Sys.writeFile(directory + "/freezer.state", "FROZEN")) != nil
        default:
            Sys.signalGroup(pgid, SIGSTOP)
            return true
        }
    }

    /// Thaws.
    func thaw(cgroup: String?, pgid: Int32) {
        switch (mechanism, cgroup) {
        case (.cgroupV2, let directory?): _ = try? Sys.writeFile(directory + "/cgroup.freeze", "0")
        case (.cgroupV1, let directory?): _ = try? Sys.writeFile(directory + "/freezer.state", "THAWED")
        default: Sys.signalGroup(pgid, SIGCONT)
        }
    }

    /// Kills everything of the handler: `cgroup.kill` (v2), else SIGKILL to the group and the leader's pidfd.
    /// Frozen processes die on SIGKILL.
    func kill(cgroup: String?, pgid: Int32, pidfd: Int32) {
        if mechanism == .cgroupV2, let cgroup, (try? Sys.writeFile(cgroup + "/cgroup.kill", "1")) != nil {
            return
        }
        Sys.signal(pidfd: pidfd, SIGKILL)
        Sys.signalGroup(pgid, SIGKILL)
        if mechanism == .cgroupV1, let cgroup { thaw(cgroup: cgroup, pgid: pgid) }
        if mechanism == .sigstop { Sys.signalGroup(pgid, SIGCONT) }
    }

    /// Removes a handler's cgroup, and its v1 `pids` and `memory` groups, after its process exited. What it left
    /// running there (a child it started and did not stop) is killed first: a handler is one unit, as an app is, and
    /// nothing of it may run on untracked, outside the freeze and budget rules (systemd's `KillMode=control-group`
    /// does the same for a service).
    func remove(cgroup: String?) {
        guard let cgroup else { return }
        killLeftovers(cgroup)
        Sys.removeDirectory(cgroup)
        let name = cgroup.split(separator: "/").last.map(String.init) ?? ""
        for v1 in v1Bases where !name.isEmpty { Sys.removeDirectory(v1 + "/" + name) }
        if !name.isEmpty { removeThrottleGroups(name) }
    }

    /// Kills what is left in a handler's cgroup whose leader exited: `cgroup.kill` (v2), else SIGKILL to each process
    /// `cgroup.procs` lists (the v1 freezer group), thawed so that they die; then waits at most 100 ms until it is
    /// empty (SIGKILLed processes go in microseconds; one in uninterruptible sleep is left to the rmdir's EBUSY).
    /// Never a group holding the agent itself: a handler's group is a leaf the agent made, and if it is not (a
    /// launch that failed to move its child, a group reused by a mistake) the agent is the last thing to kill.
    private func killLeftovers(_ cgroup: String) {
        func procs() -> [Int32] {
            (Sys.readText(cgroup + "/cgroup.procs", maxBytes: 1 << 16) ?? "").split(separator: "\n").compactMap {
                Int32($0)
            }
        }
        func populated() -> Bool {
            switch mechanism {
            case .cgroupV2: return Sys.readText(cgroup + "/cgroup.events")?.includes("populated 1") == true
            case .cgroupV1: return !procs().isEmpty
            default: return false
            }
        }
        guard populated(), !procs().contains(Sys.processID) else { return }
        if mechanism == .cgroupV2 {
            _ = try? Sys.writeFile(cgroup + "/cgroup.kill", "1")
        } else {
            for pid in procs() where pid != Sys.processID { _ = Sys.signal(pid: pid, SIGKILL) }
            _ = try? Sys.writeFile(cgroup + "/freezer.state", "THAWED")
        }
        for _ in 0..<50 where populated() { Sys.pause(milliseconds: 2) }
    }

    /// Removes the agent's base directories (at shutdown).
    func removeBase() {
        if let base { Sys.removeDirectory(base) }
        // A handler whose exit was not seen yet (it died with the others at shutdown) leaves its (empty) v1 groups.
        for v1 in v1Bases {
            for child in ((try? Sys.directoryEntries(v1)) ?? []) where !child.includes(".") {
                Sys.removeDirectory(v1 + "/" + child)
            }
            Sys.removeDirectory(v1)
        }
        removeThrottleBases()
    }
}

/// A launched handler process: its pid, process group, pidfd (owned here, closed by ``close()``) and cgroup.
final class HandlerProcess: Sendable {
    let pid: Int32
    let pidfd: Int32
    let cgroup: String?

    init(pid: Int32, pidfd: Int32, cgroup: String?) {
        self.pid = pid
        self.pidfd = pidfd
        self.cgroup = cgroup
    }

    /// Closes the pidfd once the process was reaped.
    func close() { Sys.close(pidfd) }
}
