import FoundationEssentials
import Logging
import RouseActivation
import RouseAgentClient
import RouseAgentCore
import RouseSystem

/// Handler lifecycle's steps on processes: launching, retrying a launch, watching for an exit.
extension Agent {
    /// Launches the handler into the background with a fresh socketpair as fd 3 (its launch identity).
    func launch(_ name: String, reason: String) {
        guard let handler = handlers.configuration(of: name) else { return }
        let metadata: Logger.Metadata = ["handler": "\(name)", "reason": "\(reason)"]
        let identity: HandlerCredentials
        let executable: String
        do throws(AgentError) {
            guard let command = handler.command.first else { throw AgentError.identity("handler \(name): no command") }
            executable = command
            identity = try HandlerCredentials.resolve(
                handler, agentUID: Sys.uid, agentGID: Sys.gid,
                defaultUser: configuration.handlerUser)
            if let problem = ExecutableCheck.problem(command: handler.command, runsAs: identity.account.uid) {
                throw AgentError.identity("handler \(name): \(problem)")
            }
        } catch {
            // A lookup that failed for want of descriptors or memory is not a refusal: wait it out.
            if retryAfterShortage(name, reason: reason, error: error, deadline: handler.rules.launchDeadline) { return }
            logger.error("launch refused", metadata: metadata.merging(["error": "\(error.detail)"]) { $1 })
            handlers.launchRefused(name, error.detail)
            launchFailed(name)
            return
        }
        do {
            let (mine, theirs) = try AgentError.wrapping(try Sys.socketPair())
            let session = configuration.mode == .user ? sessionEnvironment : nil
            var environment = identity.environment(
                for: handler, agent: ProcessInfo.processInfo.environment, extra: configuration.handlerEnvironment,
                session: session)
            environment["ROUSE_AGENT_FD"] = "3"
            environment["ROUSE_HANDLER"] = name
            environment["ROUSE_LAUNCH_REASON"] = reason
            environment["ROUSE_AGENT_SOCKET"] = configuration.socketPath
            let spawned: (pid: Int32, pidfd: Int32)
            // Its cgroup joined before it runs (rouse_spawn_handler), and its own output stream (never the agent's).
            let prepared: (directory: String, procs: [Int32], problems: [String])?
            let output: Int32
            do {
                prepared = try AgentError.wrapping(
                    try control.prepare(
                        handler: name, tasksMax: handler.tasksMax, memoryMaxBytes: handler.memoryMaxBytes))
                do {
                    output = try AgentError.wrapping(try HandlerOutput.open(handler: name, logger: logger))
                } catch {
                    for fd in prepared?.procs ?? [] { Sys.close(fd) }
                    throw error
                }
            } catch {
                Sys.close(mine)
                Sys.close(theirs)
                throw error
            }
            defer {
                Sys.close(output)
                for fd in prepared?.procs ?? [] { Sys.close(fd) }
            }
            if let problems = prepared?.problems, !problems.isEmpty {
                logger.error(
                    "handler limits not applied",
                    metadata: metadata.merging(["problems": "\(problems.joined(separator: "; "))"]) { $1 })
            }
            do {
                spawned = try AgentError.wrapping(
                    try Sys.spawnHandler(
                        path: executable, arguments: handler.command,
                        environment: environment.map { "\($0.key)=\($0.value)" }, channel: theirs, output: output,
                        cgroupProcs: prepared?.procs ?? [],
                        identity: identity.switches ? (identity.account.uid, identity.gid, identity.groups) : nil,
                        oomScoreAdjust: Int32(MemoryPressurePolicy.oomScoreAdjust(.launching, protected: false))))
            } catch {
                Sys.close(mine)
                Sys.close(theirs)
                throw error
            }
            Sys.close(theirs)
            // Already there (it joined before running); this creates it where prepare could not.
            let cgroup = control.place(pid: spawned.pid, handler: name)
            let process = HandlerProcess(pid: spawned.pid, pidfd: spawned.pidfd, cgroup: cgroup)
            handlers.launched(name, process, reason: reason, now: now)
            terminations.stopAsked.remove(name)  // asked of a process before this one
            preservations.reset(name)
            remember(name, process, executable: Sys.realPath(executable) ?? executable)
            _ = makeConnection(fd: mine, peer: nil, launchedFor: name)
            logger.info(
                "handler launched",
                metadata: metadata.merging(["pid": "\(spawned.pid)", "cgroup": "\(cgroup ?? "none")"]) { $1 })
            watch(name, process, child: true)
        } catch {
            if let error = error as? AgentError,
                retryAfterShortage(name, reason: reason, error: error, deadline: handler.rules.launchDeadline)
            {
                return
            }
            logger.error("launch failed", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            launchFailed(name)
        }
    }

    /// Out of descriptors or memory (an IPC flood, a loaded machine) at any step of a launch, from reading the
    /// handler's account to the spawn: the pushes waiting for it are kept, and the launch is tried again every
    /// 250 ms until its launch deadline has passed. False when `error` is no shortage or the deadline has passed.
    private func retryAfterShortage(_ name: String, reason: String, error: AgentError, deadline: Duration) -> Bool {
        let attempts = handlers.launchAttempts(of: name)
        guard error.isShortage, Self.launchRetryDelay * (attempts + 1) < deadline else { return false }
        logger.warning(
            "launch failed: trying again",
            metadata: ["handler": "\(name)", "reason": "\(reason)", "error": "\(error)", "attempt": "\(attempts + 1)"])
        handlers.countLaunchAttempt(name)
        let clock = time.clock
        Task {
            try? await clock.sleep(for: Self.launchRetryDelay)
            self.retryLaunch(name, reason: reason)
        }
        return true
    }

    /// Pause between launch attempts after a shortage.
    static let launchRetryDelay = Duration.milliseconds(250)

    private func retryLaunch(_ name: String, reason: String) {
        guard handlers.process(of: name) == nil, handlers.machine(of: name)?.lifecycle == .launching else { return }
        launch(name, reason: reason)
    }

    /// A thread waits for the process to exit (reaps it when it is our `child`; a re-attached handler is not).
    func watch(_ name: String, _ process: HandlerProcess, child: Bool) {
        let exited = AsyncStream<Int32>.makeStream()
        Sys.detachedThread(name: "rouse-agent-wait-\(process.pid)") {
            let status =
                child ? Sys.wait(pidfd: process.pidfd) : Sys.waitForExit(pidfd: process.pidfd)
            exited.continuation.yield(status)
            exited.continuation.finish()
        }
        Task {
            for await status in exited.stream { self.processExited(name, process: process, status: status) }
        }
    }

    /// The handler cannot be launched: the pushes waiting for it are consumed (acknowledged), as iOS drops a
    /// push for an app it cannot launch; the failure is logged.
    private func launchFailed(_ name: String) {
        let waiting = handlers.machine(of: name)?.waiting ?? []
        let actions = handlers.step(name) { $0.exited(now: now) }
        apply(name, actions)
        // Those the rules consumed themselves (a push handed again after a clean exit) are acknowledged once.
        let acked = Set(actions.compactMap { if case .ack(let id) = $0 { id } else { nil } })
        let rest = waiting.filter { !acked.contains($0.id) }
        if !rest.isEmpty {
            apply(name, rest.map { HandlerAction.ack(pushID: $0.id) })
        }
    }

    func processExited(_ name: String, process: HandlerProcess, status: Int32) {
        process.close()
        control.remove(cgroup: process.cgroup)
        let waiting = handlers.machine(of: name)?.waiting ?? []
        let inGrace = terminations.isPending(name)
        terminationEnded(name, status: status)
        guard handlers.processExited(name, process) else { return }
        // Clean: status 0 by its own choice (no stop asked by the agent, the agent not stopping); see HandlerExit.
        let stopAsked = terminations.stopAsked.remove(name) != nil || inGrace
        let exit: HandlerExit = status == 0 && !stopAsked && !terminations.agentStopping ? .clean : .crashed
        logger.info(
            "handler exited", metadata: ["handler": "\(name)", "status": "\(status)", "clean": "\(exit == .clean)"])
        if preservations.flags(of: name).launchBegun { launchAbandoned(name) }
        preservations.reset(name)
        preservations.wake(name)  // it can no longer answer
        holderGone(name, reason: .processExited)
        closeOpenProtectedFiles(name)
        fetchHandlerGone(name)
        forget(name)
        // Pushes it never got go back to the gateway's care: let a re-send of them through again.
        for push in waiting { link.endDelivery(push.id) }
        let wall = wallMilliseconds
        apply(name, handlers.step(name) { $0.exited(now: now, exit: exit, wallNowMilliseconds: wall) })
    }
}
