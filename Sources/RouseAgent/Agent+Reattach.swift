import FoundationEssentials
import Logging
import RouseAgentClient
import RouseAgentCore
import RouseSystem

extension Agent {
    // MARK: Re-attaching

    /// Stores who the launched process is, in the durable state, so that a restarted agent can re-attach.
    func remember(_ name: String, _ process: HandlerProcess, executable: String) {
        guard let start = Sys.startTime(pid: process.pid) else { return }
        durable.updateProcesses { processes in
            processes[name] = HandlerIdentity(
                pid: process.pid, startTime: start, executable: executable, cgroup: process.cgroup)
        }
    }

    /// Drops the stored identity (the process exited).
    func forget(_ name: String) { durable.forgetProcess(name) }

    /// At start: re-attaches to the handler processes an earlier agent launched that still run. A process is
    /// adopted only if its pidfd opens and its start time and executable are the stored ones (a recycled pid
    /// is not); it is moved into this agent's cgroup (which thaws it), must register again within the launch
    /// deadline (its client reconnects to the socket), and is watched through its pidfd.
    func reattach() {
        let stored = durable.processes
        guard !stored.isEmpty else { return }
        durable.updateProcesses { processes in
            for (name, identity) in stored.sorted(by: { $0.key < $1.key }) {
                processes[name] = reattach(name, identity)
            }
        }
    }

    /// Re-attaches to `identity`'s process for handler `name`; returns what is stored of it (nil: nothing, it is
    /// gone or not the handler that was launched).
    private func reattach(_ name: String, _ identity: HandlerIdentity) -> HandlerIdentity? {
        var metadata: Logger.Metadata = ["handler": "\(name)", "pid": "\(identity.pid)"]
        guard handlers.contains(name), handlers.process(of: name) == nil,
            Sys.startTime(pid: identity.pid) == identity.startTime,
            let pidfd = Sys.openPidfd(pid: identity.pid)
        else {
            logger.info("not re-attaching: the process is gone", metadata: metadata)
            return nil
        }
        // The pidfd pins the process: checked again now, the start time and executable are its own.
        let executable = Sys.executable(pid: identity.pid)
        guard Sys.startTime(pid: identity.pid) == identity.startTime, executable == identity.executable
        else {
            metadata["executable"] = "\(executable ?? "unreadable")"
            logger.warning("not re-attaching: the process is not the handler that was launched", metadata: metadata)
            Sys.close(pidfd)
            return nil
        }
        let limits = handlers.configuration(of: name).map { ($0.tasksMax, $0.memoryMaxBytes) }
        let cgroup = control.place(pid: identity.pid, handler: name, limits: limits)
        control.thaw(cgroup: cgroup, pgid: identity.pid)
        let process = HandlerProcess(pid: identity.pid, pidfd: pidfd, cgroup: cgroup)
        handlers.launched(name, process, reason: "reattached", now: now)
        preservations.adopted(name)
        metadata["cgroup"] = "\(cgroup ?? "none")"
        logger.notice("re-attached to a running handler", metadata: metadata)
        watch(name, process, child: false)
        var adopted = identity
        adopted.cgroup = cgroup
        return adopted
    }

    /// Whether `connection` is the re-attached process of `name` reconnecting (checked through its pidfd).
    func isAdoptedProcess(_ name: String, _ connection: IPCConnection) -> Bool {
        guard preservations.flags(of: name).adopted, let process = handlers.process(of: name),
            let peer = connection.peer, peer.pidfd >= 0, peer.pid == process.pid
        else { return false }
        return Sys.pid(ofPidfd: peer.pidfd) == process.pid
            && Sys.pid(ofPidfd: process.pidfd) == process.pid
    }
}
