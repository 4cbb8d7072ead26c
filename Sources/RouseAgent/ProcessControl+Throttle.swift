import Foundation
import RouseAgentCore
import RouseSystem

/// Where handlers' CPU weights go: the cgroup v2 `cpu` controller in their cgroups, else groups of their own in the
/// cgroup v1 `cpu` (and `cpuacct`) hierarchies, else nowhere (status `throttleNote`).
extension ProcessControl {
    /// Sets ``throttleBases`` (v1) or ``cpuV2`` (v2): the cpu controller enabled for the handlers' cgroups where it
    /// can be, else this process's writable v1 `cpu` and `cpuacct` hierarchies (a group named `tag` made in each).
    mutating func findThrottling(tag: String) {
        if mechanism == .cgroupV2, let base, Self.enableControllers(["cpu"], below: base, moving: Sys.processID) == nil
        {
            cpuV2 = true
            throttleNote = "cpu.weight in \(base)/HANDLER"
            return
        }
        var bases: [String] = []
        for controller in ["cpu", "cpuacct"] {
            guard let directory = Self.cgroupV1Location(controller) else { continue }
            let base = directory + "/" + tag
            if bases.contains(base) { continue }  // co-mounted (cpu,cpuacct)
            if (try? Sys.makeDirectory(base, mode: 0o755)) != nil { bases.append(base) }
        }
        throttleBases = bases
        throttleNote =
            bases.isEmpty ? "no cpu controller reachable: no CPU weights" : "cpu.shares in \(bases[0])/HANDLER"
    }

    /// Creates the handler's v1 cpu/cpuacct groups (none on v2 or without them); their directories.
    func makeThrottleGroups(_ handler: String) -> [String] {
        throttleBases.compactMap { base in
            let directory = base + "/" + handler
            return (try? Sys.makeDirectory(directory, mode: 0o755)) != nil || Sys.exists(directory) ? directory : nil
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
            return Int64(text.trimmingCharacters(in: .whitespacesAndNewlines)).map { $0 / 1_000 }
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

    /// Removes the agent's v1 cpu/cpuacct bases (and handler groups left in them).
    func removeThrottleBases() {
        for base in throttleBases {
            for child in ((try? Sys.directoryEntries(base)) ?? []) where !child.contains(".") {
                Sys.removeDirectory(base + "/" + child)
            }
            Sys.removeDirectory(base)
        }
    }
}
