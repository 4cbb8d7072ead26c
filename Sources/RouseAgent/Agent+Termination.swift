import Glibc
import Logging
import RouseAgentCore
import RouseSystem
import RouseWire

/// Termination notices (docs/handler-protocol.md, "willTerminate"): when the agent stops a running handler (the user's
/// stop, a rule, a reload that removed it, the agent's own stop), the handler gets `willTerminate` and its
/// `termination-grace-seconds` to exit by itself, then the kill; a frozen handler, one not connected, and every
/// handler at a system shutdown are killed at once (``HandlerTermination``).
extension Agent {
    /// Stops `name` for `reason`: a notice and the grace, or the kill now. `process` and `connection` are the
    /// handler's when it is no longer in the table (a reload removed it).
    func terminate(
        _ name: String, reason: TerminationReason, process: HandlerProcess? = nil, connection: IPCConnection? = nil,
        lifecycle: HandlerLifecycle? = nil, grace: Duration? = nil
    ) {
        let process = process ?? handlers.process(of: name)
        let connection = connection ?? handlers.connection(of: name)
        let lifecycle = lifecycle ?? handlers.machine(of: name)?.lifecycle ?? .notRunning
        let grace = grace ?? handlers.configuration(of: name)?.rules.terminationGrace ?? .zero
        let reason = terminations.systemGoingDown ? TerminationReason.systemShutdown : reason
        terminations.stopAsked.insert(name)
        var entry = terminations.entries[name] ?? Terminations.Entry()
        entry.process = process
        entry.peerPidfd = connection?.peer?.pidfd
        entry.peerPid = connection?.peer?.pid
        let actions = entry.machine.begin(
            reason: reason, lifecycle: lifecycle, connected: connection != nil, grace: grace, now: now)
        terminations.entries[name] = entry
        performTermination(name, actions, connection: connection)
        terminations.settle()
        rescheduleTerminationTimer()
    }

    private func performTermination(
        _ name: String, _ actions: [HandlerTermination.Action], connection: IPCConnection?
    ) {
        for action in actions {
            switch action {
            case .notify(let reason, let seconds):
                let sent =
                    connection?.send(.willTerminate(.init(reason: reason.rawValue, seconds: seconds))) == true
                logger.notice(
                    "termination notice sent",
                    metadata: ["handler": "\(name)", "reason": "\(reason)", "seconds": "\(seconds)", "sent": "\(sent)"])
                if sent {
                    terminations.countNotice()
                } else {
                    // Could not be told (its connection is gone or full): killed now.
                    _ = terminations.entries[name]?.machine.exited()
                    killNow(name, reason: reason)
                }
            case .kill(let reason):
                killNow(name, reason: reason)
            case .log(let text, let values):
                var metadata: Logger.Metadata = ["handler": "\(name)"]
                for (key, value) in values { metadata[key] = "\(value)" }
                logger.notice("\(text)", metadata: metadata)
            }
        }
    }

    /// SIGKILL (`cgroup.kill`) for the handler's process, or its connected peer's.
    private func killNow(_ name: String, reason: TerminationReason) {
        let entry = terminations.entries[name]
        if let process = entry?.process {
            control.kill(cgroup: process.cgroup, pgid: process.pid, pidfd: process.pidfd)
        } else if let pidfd = entry?.peerPidfd, pidfd >= 0, let pid = entry?.peerPid,
            // Only while the descriptor still is that peer's pidfd (its connection closes it at its end, and the
            // number is then reused), and never the agent itself (a client in the agent's own process, as in the
            // tests: a reused number once SIGKILLed the whole test process).
            pid != Sys.processID, Sys.pid(ofPidfd: pidfd) == pid
        {
            Sys.signal(pidfd: pidfd, SIGKILL)
        }
        logger.info("handler killed", metadata: ["handler": "\(name)", "reason": "\(reason)"])
    }

    /// The handler's process exited (or its connection closed): a grace under way ends with no kill.
    func terminationEnded(_ name: String, status: Int32? = nil) {
        if let status { terminations.lastExitStatus[name] = status }
        guard var entry = terminations.entries[name] else { return }
        if entry.machine.exited() {
            terminations.countExitedInGrace()
            logger.info("handler exited within the termination grace", metadata: ["handler": "\(name)"])
        }
        terminations.entries[name] = entry
        terminations.settle()
        rescheduleTerminationTimer()
    }

    private func rescheduleTerminationTimer() {
        guard let next = terminations.nextDeadline else {
            terminations.timer.cancel()
            return
        }
        terminations.timer.arm(at: time.instant(next)) { await self.terminationTick($0) }
    }

    private func terminationTick(_ generation: UInt64) {
        guard terminations.timer.fired(generation) else { return }
        let current = now
        for name in terminations.entries.keys.sorted() {
            guard var entry = terminations.entries[name] else { continue }
            let actions = entry.machine.tick(now: current)
            terminations.entries[name] = entry
            if actions.contains(where: { if case .kill = $0 { true } else { false } }) {
                terminations.countKilledAfterGrace()
            }
            performTermination(name, actions, connection: nil)
        }
        terminations.settle()
        rescheduleTerminationTimer()
    }

    /// At the agent's stop: every handler with a process or a connection is stopped (with notices unless the system
    /// is going down), and the stop waits for their graces, on the agent's clock, bounded in real time by the largest
    /// grace (a test's manual clock must not hold the stop for ever; this waits for the kernel's exits).
    func terminateAllForShutdown() async {
        let reason: TerminationReason = terminations.systemGoingDown ? .systemShutdown : .agentStopping
        for name in handlers.names where handlers.process(of: name) != nil || handlers.connection(of: name) != nil {
            terminate(name, reason: reason)
        }
        guard terminations.anyPending else { return }
        let bound = Task {
            try? await Task.sleep(for: HandlerRules.maxTerminationGrace + .seconds(1))
            guard !Task.isCancelled else { return }
            await self.shutdownGraceBoundPassed()
        }
        await withCheckedContinuation { continuation in terminations.waitForDrain(continuation) }
        bound.cancel()
        // Whatever is still pending (the bound passed): killed now.
        for name in terminations.entries.keys.sorted() where terminations.isPending(name) {
            _ = terminations.entries[name]?.machine.exited()
            killNow(name, reason: reason)
        }
        terminations.settle()
        terminations.timer.cancel()
    }

    private func shutdownGraceBoundPassed() async {
        terminations.releaseWaiters()
    }

    /// logind's `PrepareForShutdown(true)`: the system is going down; handlers stopped from now on get no notice.
    package func systemShutdownBegan() {
        guard !terminations.systemGoingDown else { return }
        terminations.systemGoingDown = true
        logger.notice("system shutdown: handlers will be stopped without a termination notice")
    }

    /// The last exit status of `name`'s process (exit code, or 128 + the signal), nil before its first exit (tests).
    package func lastExitStatus(_ name: String) -> Int32? { terminations.lastExitStatus[name] }

    /// Whether the agent saw the system going down (tests).
    package var systemGoingDown: Bool { terminations.systemGoingDown }

    /// Notices sent, handlers that exited within their grace, handlers killed after it (tests).
    package var terminationCounts: (notices: Int, exitedInGrace: Int, killedAfterGrace: Int) {
        (terminations.notices, terminations.exitedInGrace, terminations.killedAfterGrace)
    }
}
