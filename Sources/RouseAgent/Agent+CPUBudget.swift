import Logging
import RouseAgentCore

/// The background CPU budget (issue 29, throttling): a handler running in the background is metered window by
/// window (``CPUBudgetMeter``); over its budget it is throttled (a CPU quota at the budget), over it again while
/// throttled it is terminated through the stop path. Readings are taken when the rules' timer fires (the moments the
/// agent checks background time) and at the end of each window (the same timer): no timer without a metered handler.
extension Agent {
    /// Starts `name`'s meter when it runs in the background with a budget; ends it (and removes its quota) when it
    /// does not (in the foreground, in a call, suspended).
    func syncCPUBudget(_ name: String, lifecycle: HandlerLifecycle, protected: Bool, process: HandlerProcess) {
        let budget = handlers.configuration(of: name)?.rules.backgroundCPU ?? CPUBudget(percent: 0)
        let metered = lifecycle == .background && !protected && budget.percent > 0
        guard metered else {
            if let meter = memory.cpuMeters.removeValue(forKey: process.pid), meter.throttled {
                control.setCPUQuota(
                    cgroup: process.cgroup, quotaMicroseconds: nil, periodMicroseconds: CPUBudget.periodMicroseconds)
                logger.info(
                    "background CPU quota removed",
                    metadata: ["handler": "\(name)", "state": "\(protected ? "protected" : lifecycle.rawValue)"])
            }
            return
        }
        guard memory.cpuMeters[process.pid] == nil, !memory.cpuTerminating.contains(process.pid),
            let usage = control.cpuUsageMicroseconds(cgroup: process.cgroup)
        else { return }
        let live = Set(handlers.processes.map(\.pid))
        memory.cpuMeters = memory.cpuMeters.filter { live.contains($0.key) }
        memory.cpuTerminating = memory.cpuTerminating.filter { live.contains($0) }
        memory.cpuMeters[process.pid] = CPUBudgetMeter(budget: budget, now: now, usage: usage)
    }

    /// Reads every metered handler's usage and acts on the verdict.
    func checkCPUBudgets() {
        let current = now
        for name in handlers.names {
            guard let process = handlers.process(of: name), var meter = memory.cpuMeters[process.pid],
                let usage = control.cpuUsageMicroseconds(cgroup: process.cgroup)
            else { continue }
            let verdict = meter.check(now: current, usage: usage)
            memory.cpuMeters[process.pid] = meter
            let metadata: Logger.Metadata = [
                "handler": "\(name)", "percent": "\(meter.budget.percent)",
                "window-seconds": "\(meter.budget.window.components.seconds)",
            ]
            switch verdict {
            case .within: continue
            case .throttle(let quota, let period, let used):
                memory.cpuThrottled += 1
                let set = control.setCPUQuota(
                    cgroup: process.cgroup, quotaMicroseconds: quota, periodMicroseconds: period)
                logger.warning(
                    "background CPU budget exceeded: throttled",
                    metadata: metadata.merging(
                        ["used-us": "\(used)", "quota-us": "\(quota)", "period-us": "\(period)", "quota-set": "\(set)"]
                    ) { $1 })
            case .terminate(let used):
                memory.cpuTerminated += 1
                memory.cpuMeters[process.pid] = nil
                memory.cpuTerminating.insert(process.pid)
                logger.warning(
                    "background CPU budget exceeded while throttled: terminating",
                    metadata: metadata.merging(["used-us": "\(used)"]) { $1 })
                apply(name, [.kill(reason: "background CPU budget exceeded")])
            }
        }
    }

    /// The earliest end of a metered handler's window (nil: none metered).
    var nextCPUWindowEnd: Duration? { memory.cpuMeters.values.map(\.windowEnd).min() }
}
