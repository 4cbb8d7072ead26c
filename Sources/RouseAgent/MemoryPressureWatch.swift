import RouseAgentCore
import RouseSystem

/// The agent's PSI trigger and the one thread that sleeps in `poll(2)` on it (`POLLPRI`): it wakes only when the
/// kernel reports the stall threshold passed in a window, and hands each report to the agent through ``events``.
/// Without pressure the thread sleeps and the agent is never woken for memory.
///
/// Where: the handlers' cgroup v2 subtree's `memory.pressure` (the agent's base directory: pressure the handlers
/// cause or suffer), else the system's `/proc/pressure/memory` (a hybrid host whose v2 hierarchy has no PSI for us,
/// or a cgroup v1 agent). None: PSI disabled (`psi=0`) or not permitted; the reason is kept for status.
final class MemoryPressureWatch: Sendable {
    /// One report per trigger firing; finishes when stopped or when the trigger's file went away.
    let events: AsyncStream<Void>
    /// The PSI file the trigger is on (its `total=` is read at each report and check).
    let path: String
    /// The trigger written.
    let trigger: MemoryPressureTrigger
    private let fd: Int32
    private let stopFD: Int32

    /// Opens the trigger on the first of `paths` that takes it; the reasons the others did not, when none did.
    static func open(
        paths: [String], trigger: MemoryPressureTrigger
    ) -> Result<MemoryPressureWatch, MemoryPressureUnavailable> {
        var reasons: [String] = []
        for path in paths {
            guard Sys.exists(path) else {
                reasons.append("\(path): absent")
                continue
            }
            do {
                let fd = try Sys.openPressureTrigger(path, trigger: trigger.description)
                do {
                    return .success(try MemoryPressureWatch(fd: fd, path: path, trigger: trigger))
                } catch {
                    Sys.close(fd)
                    reasons.append("\(path): \(error)")
                }
            } catch {
                reasons.append("\(path): \(error)")
            }
        }
        return .failure(MemoryPressureUnavailable(reasons: reasons))
    }

    private init(fd: Int32, path: String, trigger: MemoryPressureTrigger) throws {
        self.fd = fd
        self.path = path
        self.trigger = trigger
        stopFD = try AgentError.wrapping(try Sys.eventFD())
        let (events, continuation) = AsyncStream<Void>.makeStream()
        self.events = events
        // The thread holds this object: its descriptors stay open until the thread has gone.
        Sys.detachedThread(name: "rouse-agent-memory") { [self] in
            while Sys.waitForPressure(self.fd, stop: self.stopFD) == .pressure {
                continuation.yield()
            }
            continuation.finish()
        }
    }

    /// The stall counter of the trigger's kind (µs since boot or since the cgroup was made).
    var stallMicroseconds: Int64 { Sys.pressureTotal(path, full: trigger.kind == .full) ?? 0 }

    /// Ends the thread; the descriptors are closed with this object, after the thread has gone.
    func stop() { Sys.eventFDSignal(stopFD) }

    deinit {
        Sys.close(stopFD)
        Sys.close(fd)
    }
}

/// No PSI trigger could be opened: why, per file tried.
struct MemoryPressureUnavailable: Error {
    let reasons: [String]
}
