import Glibc
import RouseSystem

/// Where a handler's `[limits] tasks-max` and `memory-max-mib` are enforced (status `limits`).
package enum LimitMechanism: String, Sendable, Codable {
    /// `pids.max`, `memory.max` (and `memory.swap.max` 0) in the handler's cgroup v2 directory: the pids and memory
    /// controllers reach it.
    case cgroupV2 = "cgroup-v2"
    /// A hybrid host (pids and memory bound to cgroup v1 hierarchies): the handler also joins groups of its own in the
    /// v1 `pids` (`pids.max`) and `memory` (`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes`) hierarchies.
    case cgroupV1 = "cgroup-v1"
    /// Neither: the limits cannot be applied (logged at start, shown in status).
    case none
}

/// Finding where the limits go, and writing them.
extension ProcessControl {
    /// Sets ``limits``: cgroup v2 when the pids and memory controllers can be enabled for the handlers' cgroups
    /// (`+pids +memory` in our base's `cgroup.subtree_control`), else cgroup v1 when this process is in writable v1
    /// `pids` and `memory` hierarchies (our groups made under its own there, named `tag`), else none.
    mutating func findLimits(tag: String) {
        guard base != nil else {
            limits = .none
            limitsNote = "tasks-max and memory-max-mib cannot be applied: handlers have no cgroup (\(note))"
            return
        }
        var reasons: [String] = []
        if mechanism == .cgroupV2, let base {
            if let problem = Self.enableV2Controllers(base) {
                reasons.append(problem)
            } else {
                limits = .cgroupV2
                limitsNote = "pids.max, memory.max in \(base)/HANDLER"
                return
            }
        }
        var bases: [String] = []
        for controller in ["pids", "memory"] {
            guard let directory = Self.cgroupV1Location(controller) else {
                reasons.append("no cgroup v1 \(controller) hierarchy holding this process")
                break
            }
            let base = directory + "/" + tag
            do {
                try Sys.makeDirectory(base, mode: 0o755)
                bases.append(base)
            } catch {
                reasons.append("\(base): \(error)")
                break
            }
        }
        if bases.count == 2 {
            limits = .cgroupV1
            v1Bases = bases
            limitsNote = "cgroup v1 groups \(bases[0])/HANDLER, \(bases[1])/HANDLER"
            return
        }
        for base in bases { Sys.removeDirectory(base) }
        limits = .none
        limitsNote = "tasks-max and memory-max-mib cannot be applied: " + reasons.joined(separator: "; ")
    }

    /// Enables the pids and memory controllers for the children of `base`; nil when done, else why not. Where they do
    /// not reach `base` yet, `base`'s parent (the agent's own cgroup) is asked for them first; see
    /// ``enableControllers(_:below:moving:)``.
    static func enableV2Controllers(_ base: String) -> String? {
        enableControllers(["pids", "memory"], below: base, moving: Sys.processID)
    }

    /// The name of the leaf cgroup the agent moves into inside its own (``enableControllers(_:below:moving:)``).
    static let agentLeaf = "agent"

    /// Enables `controllers` for the children of `base` (whose parent is the cgroup `process` lives in); nil when
    /// done, else why not.
    ///
    /// cgroup v2 lets a cgroup hand controllers to its children only while it holds no process itself (the "no
    /// internal process" rule; the root and a namespace's root are exempt): under systemd (`Delegate=yes`) the
    /// agent's own cgroup is its unit's, the agent is in it, and writing its `cgroup.subtree_control` fails with
    /// EBUSY. So `process` (the agent) moves into a leaf of its own, `<own cgroup>/agent`, as systemd's delegation
    /// rules expect of a delegated service, and the write is tried again. Nothing else moves: only `process` is
    /// written to the leaf's `cgroup.procs`.
    static func enableControllers(_ controllers: [String], below base: String, moving process: Int32) -> String? {
        func available() -> Set<Substring> {
            Set((Sys.readText(base + "/cgroup.controllers") ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" }))
        }
        let wanted = Set(controllers.map { Substring($0) })
        let enable = controllers.map { "+" + $0 }.joined(separator: " ")
        if !available().isSuperset(of: wanted) {
            let own = parent(of: base)
            do {
                try Sys.writeFile(own + "/cgroup.subtree_control", enable)
            } catch  where error.code == .busy {
                let leaf = own + "/" + agentLeaf
                do {
                    if !Sys.exists(leaf) { try Sys.makeDirectory(leaf, mode: 0o755) }
                    try Sys.writeFile(leaf + "/cgroup.procs", "\(process)\n")
                    try Sys.writeFile(own + "/cgroup.subtree_control", enable)
                } catch {
                    return "\(own) holds this process and it could not move into \(leaf): \(error)"
                }
            } catch {
                // Not available to the parent either (a hybrid host: the controllers are bound to cgroup v1).
            }
        }
        guard available().isSuperset(of: wanted) else {
            return "the cgroup v2 \(controllers.joined(separator: " and ")) controllers do not reach \(base) "
                + "(its parent's subtree_control)"
        }
        do {
            try Sys.writeFile(base + "/cgroup.subtree_control", enable)
            return nil
        } catch {
            return "\(base)/cgroup.subtree_control: \(error)"
        }
    }

    /// Writes `pids.max`, `memory.max` and (where swap is accounted) `memory.swap.max` 0 into a handler's cgroup v2
    /// directory; what failed.
    static func writeV2Limits(_ directory: String, tasksMax: Int, memoryMaxBytes: Int64) throws(SystemError)
        -> [String]
    {
        var problems: [String] = []
        for (file, value) in [("pids.max", "\(tasksMax)"), ("memory.max", "\(memoryMaxBytes)")] {
            do throws(SystemError) {
                try Sys.writeFile(directory + "/" + file, value + "\n")
            } catch {
                if error.isShortage { throw error }
                problems.append("\(directory)/\(file): \(error)")
            }
        }
        if Sys.exists(directory + "/memory.swap.max") {
            _ = try? Sys.writeFile(directory + "/memory.swap.max", "0\n")
        }
        return problems
    }

    /// Creates `handler`'s groups in the v1 `pids` and `memory` hierarchies with its limits (`pids.max`;
    /// `memory.limit_in_bytes` and, where swap is accounted, `memory.memsw.limit_in_bytes`): the directories, and what
    /// failed.
    /// A shortage (`EMFILE` opening a limit file) is thrown: the launch waits it out rather than go on without limits.
    func makeV1Groups(_ handler: String, tasksMax: Int, memoryMaxBytes: Int64) throws(SystemError) -> (
        directories: [String], problems: [String]
    ) {
        var directories: [String] = []
        var problems: [String] = []
        for base in v1Bases {
            let directory = base + "/" + handler
            do throws(SystemError) {
                try Sys.makeDirectory(directory, mode: 0o755)
                if Sys.exists(directory + "/pids.max") {
                    try Sys.writeFile(directory + "/pids.max", "\(tasksMax)\n")
                } else {
                    try Sys.writeFile(directory + "/memory.limit_in_bytes", "\(memoryMaxBytes)\n")
                    // Swap counted too (absent without swap accounting): at least the memory limit, so it is written
                    // second.
                    if Sys.exists(directory + "/memory.memsw.limit_in_bytes") {
                        try Sys.writeFile(directory + "/memory.memsw.limit_in_bytes", "\(memoryMaxBytes)\n")
                    }
                }
                directories.append(directory)
            } catch {
                if error.isShortage { throw error }
                problems.append("\(directory): \(error)")
            }
        }
        return (directories, problems)
    }

    /// The directory of this process's cgroup in the v1 hierarchy of `controller` (`N:pids:/path` in
    /// `/proc/self/cgroup`, mounted where `/proc/self/mountinfo` says), when writable.
    static func cgroupV1Location(_ controller: String) -> String? {
        guard let mounts = Sys.readText("/proc/self/mountinfo"), let own = Sys.readText("/proc/self/cgroup") else {
            return nil
        }
        var path: String?
        for line in own.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            if fields.count == 3, fields[1].split(separator: ",").contains(Substring(controller)) {
                path = String(fields[2])
            }
        }
        guard let path else { return nil }
        for line in mounts.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard let dash = parts.firstIndex(of: "-"), dash + 3 < parts.count, parts[dash + 1] == "cgroup",
                parts[dash + 3].split(separator: ",").contains(Substring(controller)), parts.count > 4
            else { continue }
            // The mount shows the hierarchy from `root` down (a container's cgroup namespace or bind mount).
            let root = String(parts[3])
            var relative = path
            if root != "/" {
                guard path == root || path.hasPrefix(root + "/") else { continue }
                relative = String(path.dropFirst(root.count))
            }
            let directory = String(parts[4]) + (relative == "/" ? "" : relative)
            return Sys.writable(directory) ? directory : nil
        }
        return nil
    }

    /// Removes the groups of agents that are gone from a v1 hierarchy's `parent` (those still holding processes stay
    /// until a later start; their processes are killed through the v2 or freezer groups).
    static func removeStaleV1(in parent: String) {
        for entry in ((try? Sys.directoryEntries(parent)) ?? []) where entry.hasPrefix("rouse-agent-") {
            let pidText = entry.dropFirst("rouse-agent-".count).prefix { $0 != "-" }
            guard let pid = Int32(pidText), !Sys.processExists(pid) else { continue }
            let directory = parent + "/" + entry
            for child in ((try? Sys.directoryEntries(directory)) ?? []) where !child.contains(".") {
                Sys.removeDirectory(directory + "/" + child)
            }
            Sys.removeDirectory(directory)
        }
    }
}
