import RouseAgentCore

/// The terminations under way (``HandlerTermination`` per handler, with the process or connection to kill at the end
/// of the grace), their one timer, and whether the system is going down (logind's `PrepareForShutdown`: no notices
/// then). Owned by the agent and touched only on its isolation.
final class Terminations {
    /// One termination: the rules and what to kill.
    struct Entry {
        var machine = HandlerTermination()
        /// The launched process (nil: a handler that connected by itself, killed through its peer pidfd).
        var process: HandlerProcess?
        /// The connection's peer pidfd (`SO_PEERPIDFD`) when there is no process. Owned by the connection, which
        /// closes it when it ends: the number may name another file by the time of the kill (``peerPid`` checks).
        var peerPidfd: Int32?
        /// The peer's pid, checked against the pidfd's before the kill.
        var peerPid: Int32?
    }

    /// By handler name.
    var entries: [String: Entry] = [:]
    /// The grace timer (the earliest deadline).
    let timer: AgentTimer
    /// logind said the system is shutting down or rebooting.
    var systemGoingDown = false
    /// Notices sent (for tests and the status).
    private(set) var notices = 0
    /// Handlers that exited within their grace (no kill needed).
    private(set) var exitedInGrace = 0
    /// Handlers killed at the end of their grace.
    private(set) var killedAfterGrace = 0
    /// Each handler's last exit status (exit code, or 128 + the signal): tests tell a clean exit from a SIGKILL.
    var lastExitStatus: [String: Int32] = [:]
    /// Handlers the agent asked to stop (notice or kill) since their process started: their exit is never clean
    /// (``HandlerExit``), whatever its status. Cleared at the exit.
    var stopAsked: Set<String> = []
    /// The agent is stopping: no exit is clean, so none launches a handler again.
    var agentStopping = false
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []

    /// No termination under way.
    init(timer: AgentTimer) { self.timer = timer }

    /// Whether `name` was told and is in its grace.
    func isPending(_ name: String) -> Bool { entries[name]?.machine.isPending == true }

    /// Whether any grace is under way.
    var anyPending: Bool { entries.values.contains { $0.machine.isPending } }

    /// The earliest grace deadline.
    var nextDeadline: Duration? { entries.values.compactMap(\.machine.nextDeadline).min() }

    func countNotice() { notices += 1 }
    func countExitedInGrace() { exitedInGrace += 1 }
    func countKilledAfterGrace() { killedAfterGrace += 1 }

    /// Drops the entries with nothing pending; wakes the shutdown waiting for the graces when none is left.
    func settle() {
        entries = entries.filter { $0.value.machine.isPending }
        guard !anyPending else { return }
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Resumed when no grace is under way (by ``settle()``), or by ``releaseWaiters()``.
    func waitForDrain(_ continuation: CheckedContinuation<Void, Never>) { drainWaiters.append(continuation) }

    /// Wakes every waiter (the shutdown's real-time bound passed).
    func releaseWaiters() {
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}
