import Logging
import RouseAgentCore

/// The freeze-time rules (iOS's rules for suspended apps): where a handler's background time ends, the agent looks
/// at what it holds and freezes it, or terminates it instead through the stop path (`exits-on-suspend`, a lock on a
/// declared exclusive file, a listening socket under `listening-sockets = "terminate"`). The choice is
/// ``FreezeDecision``'s; what the handler holds is ``HeldResourceProbe``'s reading of `/proc`.
extension Agent {
    /// Freezes `name` (its rules said `.suspend`), unless it holds audio or a call, or its freeze rules end it.
    func suspendHandler(_ name: String) {
        // A handler in its termination grace is not frozen: it could not exit.
        guard let process = handlers.process(of: name), let configuration = handlers.configuration(of: name),
            mayFreeze(name), !terminations.isPending(name)
        else { return }
        let rules = configuration.freeze
        var held: HeldResources?
        if FreezeDecision.needsHeldResources(rules) {
            let pids = HeldResourceProbe.pids(cgroup: process.cgroup, processGroup: process.pid)
            held = HeldResourceProbe.read(pids: pids, exclusiveFiles: rules.exclusiveFiles)
        }
        var metadata: Logger.Metadata = ["handler": "\(name)"]
        switch FreezeDecision.decide(rules, held: held) {
        case .terminate(let termination):
            freezeChecks.count(termination)
            metadata["reason"] = "\(termination.reason)"
            metadata["counter"] = "\(termination.counter)"
            logger.notice("handler terminated instead of frozen", metadata: metadata)
            perform(name, .kill(reason: TerminationReason(rawValue: termination.reason)))
        case .freeze(let reported):
            freezeChecks.frozen(name, keeping: reported)
            if !reported.isEmpty {
                metadata["sockets"] = "\(reported.map(\.description).joined(separator: ","))"
                logger.notice("frozen handler keeps listening sockets", metadata: metadata)
            }
            let ok = control.freeze(cgroup: process.cgroup, pgid: process.pid)
            metadata["mechanism"] = "\(control.mechanism.rawValue)"
            metadata["ok"] = "\(ok)"
            logger.info("handler suspended", metadata: metadata)
        }
    }
}
