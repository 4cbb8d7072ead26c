import FoundationEssentials
import Glibc
import Logging
import RouseActivation
import RouseClock
import RouseSystem
import Synchronization

/// Runs the activation hook command once per grant/revoke (`HookEvent`), in order, one at a time, without
/// a shell and with a deadline: a hook still running at its deadline is killed (SIGKILL). Its exit status is
/// logged, never acted on (see docs/activations.md, "Hook").
final class ActivationHookRunner: Sendable {
    let command: [String]
    let timeout: Duration
    /// Reads how long a run took (its deadline is the kernel's: `poll` on the hook's pidfd, in real time).
    let clock: any RouseClock
    let logger: Logger
    /// Runs waiting, whether the worker thread is running, and who waits for the queue to empty. The worker is a
    /// thread of its own that exists only while there is work: no libdispatch queue (its workers leave
    /// a one-second timer behind).
    private let work = Mutex<(queue: [HookEvent], running: Bool, drained: [CheckedContinuation<Void, Never>])>(
        ([], false, []))
    /// What every run gets besides its event's variables: PATH, LANG and ROUSE_* of the agent's environment (not
    /// its credentials or notify socket); in the per-user mode also the session's audio server, bus, display and
    /// XDG variables (``setSession(_:)``), so that `pactl` finds the user's PulseAudio or PipeWire.
    private let base = Mutex<[String: String]>(
        ProcessInfo.processInfo.environment.filter { HandlerCredentials.inherited($0.key) })

    init(command: [String], timeout: Duration, clock: any RouseClock, logger: Logger) {
        self.command = command
        self.timeout = timeout
        self.clock = clock
        self.logger = logger
    }

    /// The per-user mode's session environment (at start and at each reload), over the agent's own.
    func setSession(_ session: [String: String]) {
        let environment = ProcessInfo.processInfo.environment.merging(session) { $1 }
            .filter { HandlerCredentials.inheritedInSession($0.key) }
        base.withLock { $0 = environment }
    }

    /// Queues one run; returns at once.
    func run(_ event: HookEvent) {
        let start = work.withLock { work in
            work.queue.append(event)
            defer { work.running = true }
            return !work.running
        }
        guard start else { return }
        Sys.detachedThread(name: "rouse-agent-hook") { [self] in
            while true {
                let (next, waiters) = work.withLock { work -> (HookEvent?, [CheckedContinuation<Void, Never>]) in
                    if work.queue.isEmpty {
                        work.running = false
                        defer { work.drained = [] }
                        return (nil, work.drained)
                    }
                    return (work.queue.removeFirst(), [])
                }
                guard let next else {
                    for waiter in waiters { waiter.resume() }
                    return
                }
                runNow(next)
            }
        }
    }

    /// Waits until every queued run has finished (for shutdown and tests).
    func drain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = work.withLock { work in
                if !work.running { return true }
                work.drained.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func runNow(_ event: HookEvent) {
        let metadata: Logger.Metadata = [
            "hook": "\(command[0])", "event": "\(event.kind.rawValue)", "session": "\(event.session)",
        ]
        var environment = base.withLock { $0 }
        for (key, value) in event.environment { environment[key] = value }
        let started = clock.now
        let spawned: (pid: Int32, pidfd: Int32)
        do {
            spawned = try AgentError.wrapping(
                try Sys.spawn(
                    path: command[0], arguments: command + event.arguments,
                    environment: environment.map { "\($0.key)=\($0.value)" }, channel: -1))
        } catch {
            logger.error("activation hook failed to start", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            return
        }
        defer { Sys.close(spawned.pidfd) }
        let exited = Sys.waitForExit(pidfd: spawned.pidfd, milliseconds: Int32(clamping: timeout.wholeMilliseconds))
        if !exited {
            Sys.signal(pidfd: spawned.pidfd, SIGKILL)
            Sys.signalGroup(spawned.pid, SIGKILL)
        }
        let status = Sys.wait(pidfd: spawned.pidfd)
        var fields = metadata
        fields["status"] = "\(status)"
        fields["ms"] = "\(started.duration(to: clock.now).wholeMilliseconds)"
        if !exited {
            logger.warning("activation hook killed at its deadline", metadata: fields)
        } else if status != 0 {
            logger.warning("activation hook failed", metadata: fields)
        } else {
            logger.debug("activation hook ran", metadata: fields)
        }
    }
}
