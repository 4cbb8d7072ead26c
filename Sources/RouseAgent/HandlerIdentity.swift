import RouseSystem

/// Which handler launch a process belongs to, beyond its uid: handlers without `user =` all run as the same
/// account (`rouse-handler`), so a uid and an executable do not tell one handler from another. Each launch joins
/// its handler's own cgroup before it runs (`rouse_spawn_handler`), and nothing it starts can leave it (the cgroup
/// tree is the agent's); without cgroups, each launch leads a process group of its own.
extension Agent {
    /// The handler whose launch `peer` is part of (the launch itself or anything it started), nil when it is part
    /// of none: read from `/proc/PID/cgroup` (cgroup v2), else from its process group.
    func launchOwner(of peer: IPCConnection.Peer) -> String? {
        if let path = Sys.cgroupPath(pid: peer.pid), let name = control.handlerName(cgroupPath: path) {
            return handlers.contains(name) ? name : nil
        }
        let group = Sys.processGroup(pid: peer.pid)
        return handlers.names.first { name in
            guard let process = handlers.process(of: name) else { return false }
            return process.pid == peer.pid || process.pid == group
        }
    }

    /// Why `peer`, connected through the socket path, may not register as `name` for its launch identity: it is
    /// part of another handler's launch, or `name` runs (launched by the agent) and the peer is not part of it.
    func launchIdentityProblem(_ peer: IPCConnection.Peer, as name: String) -> String? {
        let owner = launchOwner(of: peer)
        if let owner, owner != name {
            return "the peer is part of handler \(owner)'s launch (its cgroup or process group), not \(name)'s"
        }
        if owner == nil, handlers.process(of: name) != nil {
            return "handler \(name) runs, launched by the agent, and the peer is not part of that launch"
        }
        return nil
    }
}
