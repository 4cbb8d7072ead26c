import RouseSystem

/// Reading a handler's memory and the files memory pressure uses.
extension ProcessControl {
    /// The PSI files the agent's trigger may go on, best first: the handlers' subtree (cgroup v2 `memory.pressure` of
    /// the base directory), then the system's.
    var pressurePaths: [String] {
        var paths: [String] = []
        if mechanism == .cgroupV2, let base { paths.append(base + "/memory.pressure") }
        paths.append("/proc/pressure/memory")
        return paths
    }

    /// The handler's charged memory: `memory.current` of its cgroup v2 directory (memory controller on), else
    /// `memory.usage_in_bytes` of its cgroup v1 memory group; nil when neither is there.
    func memoryBytes(cgroup: String?) -> Int64? {
        guard let cgroup else { return nil }
        func number(_ path: String) -> Int64? {
            Sys.readText(path, maxBytes: 64)?.split(separator: "\n").first.flatMap { Int64($0) }
        }
        if limits == .cgroupV2, let value = number(cgroup + "/memory.current") { return value }
        if limits == .cgroupV1, let memoryBase = v1Bases.last, let name = cgroup.split(separator: "/").last {
            return number(memoryBase + "/" + name + "/memory.usage_in_bytes")
        }
        return nil
    }

    /// Sets `memory.oom.group` 1 in the handler's cgroup v2 directory (the kernel's OOM killer then kills all of it
    /// or nothing of it); nothing elsewhere.
    func setOOMGroup(cgroup: String?) {
        guard limits == .cgroupV2, let cgroup, Sys.exists(cgroup + "/memory.oom.group") else { return }
        _ = try? Sys.writeFile(cgroup + "/memory.oom.group", "1\n")
    }

    /// The processes of the handler's cgroup (`cgroup.procs`), or its leader alone without one.
    func processes(cgroup: String?, leader: Int32) -> [Int32] {
        guard let cgroup, let text = Sys.readText(cgroup + "/cgroup.procs", maxBytes: 1 << 16) else { return [leader] }
        let pids = text.split(separator: "\n").compactMap { Int32($0) }
        return pids.isEmpty ? [leader] : pids
    }
}
