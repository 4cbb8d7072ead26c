import Foundation
import Logging
import RouseAgentClient
import RouseAgentCore

extension Agent {
    // MARK: Re-attaching

    /// Stores who the launched process is, in the durable state, so that a restarted agent can re-attach.
    func remember(_ name: String, _ process: HandlerProcess, executable: String) {
        guard let start = AgentSyscalls.startTime(pid: process.pid) else { return }
        var processes = state.processes ?? [:]
        processes[name] = HandlerIdentity(
            pid: process.pid, startTime: start, executable: executable, cgroup: process.cgroup)
        state.processes = processes
        persist()
    }

    /// Drops the stored identity (the process exited).
    func forget(_ name: String) {
        guard state.processes?[name] != nil else { return }
        state.processes?[name] = nil
        persist()
    }

    /// At start: re-attaches to the handler processes an earlier agent launched that still run. A process is
    /// adopted only if its pidfd opens and its start time and executable are the stored ones (a recycled pid
    /// is not); it is moved into this agent's cgroup (which thaws it), must register again within the launch
    /// deadline (its client reconnects to the socket), and is watched through its pidfd.
    func reattach() {
        guard let stored = state.processes, !stored.isEmpty else { return }
        for (name, identity) in stored.sorted(by: { $0.key < $1.key }) {
            var metadata: Logger.Metadata = ["handler": "\(name)", "pid": "\(identity.pid)"]
            guard slots[name] != nil, slots[name]?.process == nil,
                AgentSyscalls.startTime(pid: identity.pid) == identity.startTime,
                let pidfd = AgentSyscalls.openPidfd(pid: identity.pid)
            else {
                logger.info("not re-attaching: the process is gone", metadata: metadata)
                state.processes?[name] = nil
                continue
            }
            // The pidfd pins the process: checked again now, the start time and executable are its own.
            let executable = AgentSyscalls.executable(pid: identity.pid)
            guard AgentSyscalls.startTime(pid: identity.pid) == identity.startTime, executable == identity.executable
            else {
                metadata["executable"] = "\(executable ?? "unreadable")"
                logger.warning(
                    "not re-attaching: the process is not the handler that was launched", metadata: metadata)
                AgentSyscalls.close(pidfd)
                state.processes?[name] = nil
                continue
            }
            let cgroup = control.place(pid: identity.pid, handler: name)
            control.thaw(cgroup: cgroup, pgid: identity.pid)
            let process = HandlerProcess(pid: identity.pid, pidfd: pidfd, cgroup: cgroup)
            var slot = slots[name]!
            slot.process = process
            slot.launchReason = "reattached"
            slot.machine.launched(now: now)
            slot.preservation.adopted = true
            slot.preservation.launchBegun = true
            slots[name] = slot
            state.processes?[name]?.cgroup = cgroup
            metadata["cgroup"] = "\(cgroup ?? "none")"
            logger.notice("re-attached to a running handler", metadata: metadata)
            watch(name, process, child: false)
        }
        persist()
    }

    /// Whether `connection` is the re-attached process of `name` reconnecting (checked through its pidfd).
    func isAdoptedProcess(_ name: String, _ connection: IPCConnection) -> Bool {
        guard let slot = slots[name], slot.preservation.adopted, let process = slot.process,
            let peer = connection.peer, peer.pidfd >= 0, peer.pid == process.pid
        else { return false }
        return AgentSyscalls.pid(ofPidfd: peer.pidfd) == process.pid
            && AgentSyscalls.pid(ofPidfd: process.pidfd) == process.pid
    }
}
