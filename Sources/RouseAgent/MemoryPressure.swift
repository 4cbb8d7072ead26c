import RouseAgentCore

/// How the agent watches memory pressure (docs/agent.md, "Memory pressure").
package struct MemoryPressureSettings: Sendable {
    /// The PSI trigger (`some 150000 1000000`).
    package var trigger = MemoryPressureTrigger.standard
    /// How long after a trigger the agent looks again: still above the trigger's rate → the next handler goes.
    package var persistAfter = Duration.seconds(2)
    /// The PSI files to try, in order (nil: the handlers' cgroup v2 `memory.pressure`, then `/proc/pressure/memory`).
    package var paths: [String]? = nil

    /// The defaults.
    package init() {}

    /// The default trigger's text (`--memory-pressure`).
    package static let defaultTrigger = MemoryPressureTrigger.standard.description

    /// Settings from `--memory-pressure TEXT` (`off`: nil) and the persist time; the parser's reason when the trigger
    /// is not one the kernel takes.
    package static func option(
        _ text: String, persistAfter: Duration
    ) -> Result<MemoryPressureSettings?, MemoryPressureTriggerError> {
        if text == "off" { return .success(nil) }
        switch MemoryPressureTrigger.parse(text) {
        case .success(let trigger):
            var settings = MemoryPressureSettings()
            settings.trigger = trigger
            settings.persistAfter = persistAfter
            return .success(settings)
        case .failure(let error):
            return .failure(error)
        }
    }
}

/// The memory-pressure part of the agent's state: the trigger's watch, the episode machine, its check timer, what was
/// done (for status and the benchmark). Touched only on the agent's isolation.
final class MemoryPressure {
    /// The episode machine (nil: not watched).
    var machine: MemoryPressureMachine?
    /// The trigger's watch (nil: not watched).
    var watch: MemoryPressureWatch?
    /// Why memory pressure is not watched, or where it is.
    var note = "not started"
    /// The machine's check timer.
    let timer: AgentTimer
    /// `memoryWarning` events sent.
    var warningsSent = 0
    /// Trigger reports received.
    var reports = 0
    /// Suspended handlers terminated for memory (no notice).
    var terminatedSuspended = 0
    /// Running background handlers terminated for memory (the stop path).
    var terminatedRunning = 0
    /// Persisting pressure with nobody left to terminate (only foreground handlers, calls and the agent remain).
    var nothingToTerminate = 0
    /// The last terminations, oldest first (at most ``recentLimit``).
    var recent: [MemoryStatus.Termination] = []
    static let recentLimit = 16
    /// The pids already terminated and not yet reaped (not chosen twice).
    var terminating: Set<Int32> = []
    /// The `oom_score_adj` last written per handler process (pid → value).
    var oomScores: [Int32: Int] = [:]
    /// The CPU weight last written per handler process (pid → cgroup v2 scale).
    var cpuWeights: [Int32: Int] = [:]
    /// The CPU meter per handler process running in the background with a budget (pid → meter).
    var cpuMeters: [Int32: CPUBudgetMeter] = [:]
    /// Handler processes terminated for their CPU budget and not yet reaped.
    var cpuTerminating: Set<Int32> = []
    /// Handlers throttled for their background CPU budget.
    var cpuThrottled = 0
    /// Handlers terminated for their background CPU budget.
    var cpuTerminated = 0

    init(timer: AgentTimer) { self.timer = timer }

    /// Records a termination.
    func record(_ termination: MemoryStatus.Termination) {
        recent.append(termination)
        if recent.count > Self.recentLimit { recent.removeFirst(recent.count - Self.recentLimit) }
    }
}

/// The status document's memory section.
package struct MemoryStatus: Codable, Sendable {
    /// One termination for memory.
    package struct Termination: Codable, Sendable, Equatable {
        /// The handler.
        package var handler: String
        /// `suspended` (killed without notice) or `background` (the stop path).
        package var state: String
        /// Its footprint when chosen.
        package var memoryBytes: Int64?
        /// Milliseconds from the episode's first trigger.
        package var afterMilliseconds: Int64
    }

    /// The PSI file the trigger is on; nil when memory pressure is not watched.
    package var source: String?
    /// Where, or why not.
    package var note: String
    /// The trigger.
    package var trigger: String?
    /// An episode is under way.
    package var underPressure: Bool
    /// Trigger reports.
    package var reports: Int
    /// Episodes begun.
    package var episodes: Int
    /// `memoryWarning` events sent.
    package var warningsSent: Int
    /// Suspended handlers terminated.
    package var terminatedSuspended: Int
    /// Running background handlers terminated.
    package var terminatedRunning: Int
    /// Times pressure persisted with nobody left that may be terminated.
    package var nothingToTerminate: Int
    /// The last terminations, oldest first.
    package var recent: [Termination]
    /// How long the last episode lasted, first trigger to the check that found the pressure gone.
    package var lastReliefMilliseconds: Int64?
    /// Background handlers throttled for their CPU budget (`cpu.max` / `cpu.cfs_quota_us`).
    package var cpuThrottled = 0
    /// Background handlers terminated for their CPU budget.
    package var cpuTerminated = 0
}
