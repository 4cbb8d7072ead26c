import Logging
import RouseActivation
import RouseAgentCore
import RouseClock
import RouseSystem
import RouseWire

/// Memory pressure (issue 29; docs/agent.md, "Memory pressure"): a PSI trigger on the agent's loop; on pressure a
/// `memoryWarning` to the running handlers; if it persists, terminations in ``MemoryPressurePolicy/order(_:)``:
/// suspended handlers first, largest first, without notice; then running background handlers through the stop path;
/// never a foreground handler, a call, a call or playback session, or the agent.
extension Agent {
    /// Opens the trigger (``MemoryPressureSettings``); logs where, or why not.
    func startMemoryPressure() {
        guard let settings = configuration.memoryPressure else {
            memory.note = "memory pressure not watched (off in the configuration)"
            return
        }
        let paths = settings.paths ?? control.pressurePaths
        switch MemoryPressureWatch.open(paths: paths, trigger: settings.trigger) {
        case .success(let watch):
            memory.watch = watch
            memory.machine = MemoryPressureMachine(trigger: settings.trigger, persistAfter: settings.persistAfter)
            memory.note = "trigger '\(settings.trigger)' on \(watch.path)"
            logger.info(
                "memory pressure watched", metadata: ["trigger": "\(settings.trigger)", "file": "\(watch.path)"])
            background.append(
                Task {
                    for await _ in watch.events { self.memoryPressureReported() }
                })
        case .failure(let failure):
            memory.note = "memory pressure not watched: " + failure.reasons.joined(separator: "; ")
            logger.notice("memory pressure not watched", metadata: ["reasons": "\(failure.reasons)"])
        }
    }

    /// Ends the trigger's thread and the check timer.
    func stopMemoryPressure() {
        memory.watch?.stop()
        memory.timer.cancel()
    }

    /// The trigger fired.
    func memoryPressureReported() {
        guard var machine = memory.machine, let watch = memory.watch else { return }
        memory.reports += 1
        let actions = machine.fired(now: now, stallMicroseconds: watch.stallMicroseconds)
        memory.machine = machine
        performMemory(actions)
    }

    private func memoryCheck(_ generation: UInt64) {
        guard memory.timer.fired(generation), var machine = memory.machine, let watch = memory.watch else { return }
        let actions = machine.check(now: now, stallMicroseconds: watch.stallMicroseconds)
        memory.machine = machine
        performMemory(actions)
    }

    private func performMemory(_ actions: [MemoryPressureMachine.Action]) {
        for action in actions {
            switch action {
            case .warn: sendMemoryWarnings()
            case .terminateNext: terminateForMemory()
            case .relieved(let after):
                logger.notice("memory pressure relieved", metadata: ["after-ms": "\(after.wholeMilliseconds)"])
            }
        }
        guard let next = memory.machine?.nextCheck else {
            memory.timer.cancel()
            return
        }
        memory.timer.arm(at: time.instant(next)) { await self.memoryCheck($0) }
    }

    /// `memoryWarning` to every connected handler that runs (a frozen one runs no code).
    private func sendMemoryWarnings() {
        let trigger = memory.machine?.trigger.description
        var sent: [String] = []
        for name in handlers.names {
            guard let lifecycle = handlers.machine(of: name)?.lifecycle, lifecycle != .suspended,
                lifecycle != .notRunning, let connection = handlers.connection(of: name)
            else { continue }
            let warning = AgentEvent.MemoryWarning(trigger: trigger, memoryBytes: memoryBytes(of: name))
            if connection.send(.memoryWarning(warning)) {
                memory.warningsSent += 1
                sent.append(name)
            }
        }
        logger.warning("memory pressure: warning sent", metadata: ["handlers": "\(sent.joined(separator: ","))"])
    }

    /// What the policy sees of each handler that has a process not already on its way out.
    func memoryCandidates() -> [MemoryPressurePolicy.Candidate] {
        let live = Set(handlers.processes.map(\.pid))
        memory.terminating.formIntersection(live)
        return handlers.names.compactMap { name in
            guard let machine = handlers.machine(of: name), let process = handlers.process(of: name),
                !memory.terminating.contains(process.pid)
            else { return nil }
            return MemoryPressurePolicy.Candidate(
                name: name, lifecycle: machine.lifecycle, memoryBytes: control.memoryBytes(cgroup: process.cgroup),
                protected: Self.protectedFromMemoryKills(machine))
        }
    }

    /// In a call, owing a call report, or holding a call or playback session.
    static func protectedFromMemoryKills(_ machine: HandlerMachine) -> Bool {
        !machine.activeCalls.isEmpty || !machine.owedReports.isEmpty || machine.holdsAudio
    }

    /// Terminates the first handler of the policy's order (none left: counted and logged).
    private func terminateForMemory() {
        let started = memory.machine?.episodeStart ?? now
        guard let victim = MemoryPressurePolicy.order(memoryCandidates()).first,
            let process = handlers.process(of: victim.name)
        else {
            memory.nothingToTerminate += 1
            logger.warning("memory pressure persists: no handler may be terminated")
            return
        }
        memory.terminating.insert(process.pid)
        let metadata: Logger.Metadata = [
            "handler": "\(victim.name)", "memory-bytes": "\(victim.memoryBytes.map { "\($0)" } ?? "-")",
            "state": "\(victim.running ? "background" : "suspended")",
        ]
        memory.record(
            .init(
                handler: victim.name, state: victim.running ? "background" : "suspended",
                memoryBytes: victim.memoryBytes, afterMilliseconds: (now - started).wholeMilliseconds))
        if victim.running {
            // The agent's stop path: a running handler gets what any stopped running handler gets.
            memory.terminatedRunning += 1
            logger.warning("memory pressure: terminating a background handler", metadata: metadata)
            apply(victim.name, [.kill(reason: "memory pressure")])
        } else {
            // Suspended: purged without notice (iOS).
            memory.terminatedSuspended += 1
            logger.warning("memory pressure: terminating a suspended handler", metadata: metadata)
            holderGone(victim.name, reason: .terminatedByAgent)
            control.kill(cgroup: process.cgroup, pgid: process.pid, pidfd: process.pidfd)
        }
    }

    /// A handler's charged memory now (its cgroup's), nil when not known.
    func memoryBytes(of name: String) -> Int64? {
        guard let process = handlers.process(of: name) else { return nil }
        return control.memoryBytes(cgroup: process.cgroup)
    }

    /// Keeps the kernel's OOM order in step with the policy's: the `oom_score_adj` of a handler's processes follows
    /// its state (``MemoryPressurePolicy/oomScoreAdjust(_:protected:)``); on cgroup v2 its cgroup's `memory.oom.group`
    /// is 1 (the OOM killer takes the handler whole). Written when the value changes.
    func syncMemoryPriority(_ name: String) {
        guard let machine = handlers.machine(of: name), let process = handlers.process(of: name) else { return }
        let protected = Self.protectedFromMemoryKills(machine)
        let weight = ThrottlePolicy.cpuWeight(machine.lifecycle, protected: protected)
        if memory.cpuWeights[process.pid] != weight {
            memory.cpuWeights = memory.cpuWeights.filter { pid, _ in handlers.processes.contains { $0.pid == pid } }
            memory.cpuWeights[process.pid] = weight
            control.setCPUWeight(cgroup: process.cgroup, weight: weight)
            control.setIOWeight(
                cgroup: process.cgroup, weight: ThrottlePolicy.ioWeight(machine.lifecycle, protected: protected))
        }
        syncCPUBudget(name, lifecycle: machine.lifecycle, protected: protected, process: process)
        let score = MemoryPressurePolicy.oomScoreAdjust(machine.lifecycle, protected: protected)
        guard memory.oomScores[process.pid] != score else { return }
        if memory.oomScores[process.pid] == nil { control.setOOMGroup(cgroup: process.cgroup) }
        memory.oomScores = memory.oomScores.filter { pid, _ in handlers.processes.contains { $0.pid == pid } }
        memory.oomScores[process.pid] = score
        for pid in control.processes(cgroup: process.cgroup, leader: process.pid) {
            _ = try? Sys.writeFile("/proc/\(pid)/oom_score_adj", "\(score)\n")
        }
    }

    /// The status document's memory section.
    var memoryStatus: MemoryStatus {
        MemoryStatus(
            source: memory.watch?.path, note: memory.note, trigger: memory.machine?.trigger.description,
            underPressure: memory.machine?.episodeStart != nil, reports: memory.reports,
            episodes: memory.machine?.episodes ?? 0, warningsSent: memory.warningsSent,
            terminatedSuspended: memory.terminatedSuspended, terminatedRunning: memory.terminatedRunning,
            nothingToTerminate: memory.nothingToTerminate, recent: memory.recent,
            lastReliefMilliseconds: memory.machine?.lastRelief?.wholeMilliseconds, cpuThrottled: memory.cpuThrottled,
            cpuTerminated: memory.cpuTerminated)
    }
}
