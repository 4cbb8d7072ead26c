import FoundationEssentials
import RouseAgentCore
import RouseSystem
import RouseText

/// Where handlers' CPU and I/O weights go: the cgroup v2 `cpu` and `io` controllers in their cgroups, else groups of
/// their own in the cgroup v1 `cpu` (and `cpuacct`) and `blkio` hierarchies, else nowhere (status `throttleNote`).
extension ProcessControl {
    /// Sets ``throttleBases`` (v1) or ``cpuV2`` (v2): the cpu controller enabled for the handlers' cgroups where it
    /// can be, else this process's writable v1 `cpu` and `cpuacct` hierarchies (a group named `tag` made in each);
    /// the io controller alike, else the v1 `blkio` hierarchy.
    mutating func findThrottling(tag: String) {
        var controllers = ["cpu", "cpuacct", "blkio"]
        if mechanism == .cgroupV2, let base {
            if Self.enableControllers(["io"], below: base, moving: Sys.processID) == nil {
                ioV2 = true
                ioNote = "io.bfq.weight or io.weight in \(base)/HANDLER"
                controllers.removeAll { $0 == "blkio" }
            }
            if Self.enableControllers(["cpu"], below: base, moving: Sys.processID) == nil {
                cpuV2 = true
                throttleNote = "cpu.weight in \(base)/HANDLER"
                controllers.removeAll { $0 == "cpu" || $0 == "cpuacct" }
            }
        }
        var bases: [String] = []
        for controller in controllers {
            guard let directory = Self.cgroupV1Location(controller) else { continue }
            let base = directory + "/" + tag
            if bases.contains(base) { continue }  // co-mounted (cpu,cpuacct)
            if (try? Sys.makeDirectory(base, mode: 0o755)) != nil { bases.append(base) }
        }
        throttleBases = bases
        if !cpuV2 {
            throttleNote =
                bases.first { !$0.includes("/blkio") }.map { "cpu.shares in \($0)/HANDLER" }
                ?? "no cpu controller reachable: no CPU weights"
        }
        if !ioV2 {
            ioNote =
                bases.first { $0.includes("/blkio") }.map { "blkio.bfq.weight or blkio.weight in \($0)/HANDLER" }
                ?? "no io controller reachable: no I/O weights"
        }
    }

    /// Creates the handler's v1 cpu/cpuacct/blkio groups (none on v2 or without them); their directories. A group
    /// left by the handler's previous process (it was still exiting when its exit was handled) is reused without
    /// that process's CPU quota: a handler terminated for its budget starts again unthrottled.
    func makeThrottleGroups(_ handler: String) -> [String] {
        throttleBases.compactMap { base in
            let directory = base + "/" + handler
            if (try? Sys.makeDirectory(directory, mode: 0o755)) != nil { return directory }
            guard Sys.exists(directory) else { return nil }
            if Sys.exists(directory + "/cpu.cfs_quota_us") {
                _ = try? Sys.writeFile(directory + "/cpu.cfs_quota_us", "-1\n")
            }
            return directory
        }
    }

    /// The handler's group in the v1 hierarchy holding `file` (`cpu.shares`, `cpuacct.usage`).
    private func throttleGroup(_ cgroup: String, holding file: String) -> String? {
        guard let name = cgroup.split(separator: "/").last else { return nil }
        return throttleBases.map { $0 + "/" + name }.first { Sys.exists($0 + "/" + file) }
    }

    /// Writes the handler's CPU weight (v2 `cpu.weight`, v1 `cpu.shares` scaled); false when there is nowhere to.
    @discardableResult
    func setCPUWeight(cgroup: String?, weight: Int) -> Bool {
        guard let cgroup else { return false }
        if cpuV2 { return (try? Sys.writeFile(cgroup + "/cpu.weight", "\(weight)\n")) != nil }
        guard let group = throttleGroup(cgroup, holding: "cpu.shares") else { return false }
        let shares = ThrottlePolicy.cpuShares(weight: weight)
        return (try? Sys.writeFile(group + "/cpu.shares", "\(shares)\n")) != nil
    }

    /// Writes the handler's I/O weight (v2 `io.bfq.weight`, else `io.weight`'s default; v1 `blkio.bfq.weight`, else
    /// CFQ's `blkio.weight`), on the scale of ``ThrottlePolicy/ioWeight(_:protected:)``; false when there is nowhere
    /// to. The weight counts only on a disk whose scheduler honours it (BFQ, or io.cost on v2): the operator chooses
    /// the scheduler, the agent keeps the weights ready.
    @discardableResult
    func setIOWeight(cgroup: String?, weight: Int) -> Bool {
        guard let file = ioWeightFile(cgroup: cgroup) else { return false }
        let clamped = file.hasSuffix("/blkio.weight") ? min(max(weight, 10), 1000) : weight
        let text = file.hasSuffix("/io.weight") ? "default \(clamped)\n" : "\(clamped)\n"
        return (try? Sys.writeFile(file, text)) != nil
    }

    /// The handler's I/O weight file (see ``setIOWeight(cgroup:weight:)``), for status and tests; nil without one.
    func ioWeightFile(cgroup: String?) -> String? {
        guard let cgroup else { return nil }
        if ioV2 {
            return [cgroup + "/io.bfq.weight", cgroup + "/io.weight"].first { Sys.exists($0) }
        }
        for file in ["blkio.bfq.weight", "blkio.weight"] {
            if let group = throttleGroup(cgroup, holding: file) { return group + "/" + file }
        }
        return nil
    }

    /// The handler's CPU weight as written (v2 `cpu.weight`; v1 `cpu.shares`), for status and tests.
    func cpuWeightFile(cgroup: String?) -> String? {
        guard let cgroup else { return nil }
        if cpuV2 { return cgroup + "/cpu.weight" }
        return throttleGroup(cgroup, holding: "cpu.shares").map { $0 + "/cpu.shares" }
    }

    /// The handler's cumulative CPU time in microseconds (v2 `cpu.stat` `usage_usec`, v1 `cpuacct.usage` in ns);
    /// nil when there is no reading.
    func cpuUsageMicroseconds(cgroup: String?) -> Int64? {
        guard let cgroup else { return nil }
        if let group = throttleGroup(cgroup, holding: "cpuacct.usage") {
            let text = Sys.readText(group + "/cpuacct.usage", maxBytes: 64) ?? ""
            return Int64(text.trimmingWhitespace()).map { $0 / 1_000 }
        }
        guard mechanism == .cgroupV2, let text = Sys.readText(cgroup + "/cpu.stat", maxBytes: 4096) else { return nil }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, fields[0] == "usage_usec" { return Int64(fields[1]) }
        }
        return nil
    }

    /// Sets (or, with nil, removes) the handler's CPU quota: v2 `cpu.max` "QUOTA PERIOD" / "max PERIOD", v1
    /// `cpu.cfs_period_us` and `cpu.cfs_quota_us` (-1) of its cpu group; false when there is nowhere to.
    @discardableResult
    func setCPUQuota(cgroup: String?, quotaMicroseconds: Int64?, periodMicroseconds: Int64) -> Bool {
        guard let cgroup else { return false }
        let quota = quotaMicroseconds.map { "\($0)" }
        if cpuV2 {
            return (try? Sys.writeFile(cgroup + "/cpu.max", "\(quota ?? "max") \(periodMicroseconds)\n")) != nil
        }
        guard let group = throttleGroup(cgroup, holding: "cpu.cfs_quota_us") else { return false }
        _ = try? Sys.writeFile(group + "/cpu.cfs_period_us", "\(periodMicroseconds)\n")
        return (try? Sys.writeFile(group + "/cpu.cfs_quota_us", "\(quota ?? "-1")\n")) != nil
    }

    /// Removes a handler's v1 cpu/cpuacct groups.
    func removeThrottleGroups(_ handler: String) {
        for base in throttleBases { Sys.removeDirectory(base + "/" + handler) }
    }

    /// Removes the agent's v1 cpu/cpuacct/blkio bases (and handler groups left in them). No waiting here: this
    /// runs on the agent's actor, and a group still held is removed by the next agent (``removeStaleAgents()``).
    func removeThrottleBases() {
        for base in throttleBases {
            for child in ((try? Sys.directoryEntries(base)) ?? []) where !child.includes(".") {
                Sys.removeDirectory(base + "/" + child)
            }
            Sys.removeDirectory(base)
        }
    }
}
