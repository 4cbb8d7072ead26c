import Logging
import RouseClock
import RouseSystem
import Synchronization

/// Who may hold an IPC connection, decided on the accept thread from `SO_PEERCRED` alone, before the agent opens
/// anything for the connection (its pidfd, its reader thread): at most ``total`` socket-path connections, and at
/// most ``perUser`` for each uid other than root's and the agent's own, so that one local user cannot hold every
/// slot or take the agent to its descriptor limit. The accept loop itself survives shortages of descriptors or
/// memory: it backs off (doubling from 10 ms to 1 s) and accepts again, logging at most once every 10 s.
final class IPCAdmission: Sendable {
    /// Most socket-path connections at once.
    let total: Int
    /// Most connections one ordinary uid may hold.
    let perUser: Int
    /// Uids without a quota of their own (root, the agent's user): still within ``total``.
    let exempt: Set<UInt32>
    private let counts = Mutex<(total: Int, byUID: [UInt32: Int])>((0, [:]))
    /// Counts the connections refused (`refusedOverQuota`).
    private let meter: IPCMeter?

    init(total: Int = 256, perUser: Int = 8, exempt: Set<UInt32>, meter: IPCMeter? = nil) {
        self.total = total
        self.perUser = perUser
        self.exempt = exempt
        self.meter = meter
    }

    /// Takes a slot for `uid`; false (nothing taken) when the total or its quota is reached.
    func admit(uid: UInt32) -> Bool {
        counts.withLock { counts in
            let mine = counts.byUID[uid, default: 0]
            guard counts.total < total, exempt.contains(uid) || mine < perUser else { return false }
            counts.total += 1
            counts.byUID[uid] = mine + 1
            return true
        }
    }

    /// Gives back the slot of a connection that ended.
    func release(uid: UInt32) {
        counts.withLock { counts in
            guard let mine = counts.byUID[uid], mine > 0 else { return }
            counts.total -= 1
            counts.byUID[uid] = mine == 1 ? nil : mine - 1
        }
    }

    /// The accept loop (on a thread of its own): admitted connections go to `deliver` with their peer (pidfd
    /// opened here); others are closed at once. A shortage (at `accept4` or at the peer's pidfd) closes what was
    /// accepted and backs off; it is logged at most every 10 s. Ends when the listener is shut down.
    func acceptLoop(
        listener: Int32, clock: any RouseClock, logger: Logger, deliver: @Sendable (Int32, IPCConnection.Peer) -> Void
    ) {
        var backoff = 10
        var lastLogged: RouseInstant?
        func shortage(_ error: AgentError) {
            if lastLogged.map({ $0.duration(to: clock.now) >= .seconds(10) }) ?? true {
                logger.error("IPC accept failed: backing off", metadata: ["error": "\(error.detail)"])
                lastLogged = clock.now
            }
            Sys.pause(milliseconds: backoff)
            backoff = min(backoff * 2, 1000)
        }
        while true {
            switch Sys.acceptConnection(listener) {
            case .closed:
                return
            case .shortage(let error):
                shortage(.system(error))
            case .connection(let fd):
                guard let credentials = Sys.peerCredentials(fd) else {
                    Sys.close(fd)
                    continue
                }
                guard admit(uid: credentials.uid) else {
                    meter?.count(\.refusedOverQuota)
                    logger.debug(
                        "IPC connection over quota: closed",
                        metadata: ["uid": "\(credentials.uid)", "pid": "\(credentials.pid)"])
                    Sys.close(fd)
                    continue
                }
                do {
                    // SO_PEERCRED was read once, above: the quota and the peer are the same credentials.
                    let pidfd = try AgentError.wrapping(try Sys.peerPidfd(fd, pid: credentials.pid))
                    backoff = 10
                    deliver(
                        fd,
                        IPCConnection.Peer(
                            pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, pidfd: pidfd.pidfd,
                            kernelPidfd: pidfd.kernel, groups: Sys.peerGroups(fd)))
                } catch {
                    Sys.close(fd)
                    release(uid: credentials.uid)
                    if error.isShortage { shortage(error) }
                }
            }
        }
    }
}
