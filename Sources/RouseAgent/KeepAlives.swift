import RouseAgentCore

/// Keep-alive wakes' state: the ``KeepAliveScheduler`` of every handler that asked (`setKeepAlive`), the ids given,
/// and the one timer for all of them. Owned by the ``Agent`` and touched only on its isolation; its steps are in
/// `Agent+VoIP.swift`.
final class KeepAlives {
    /// When each handler's keep-alive is, and which run together.
    var scheduler = KeepAliveScheduler()
    /// The one timer, at the earliest planned keep-alive.
    let timer: AgentTimer
    /// Keep-alive wakes run (for status and tests).
    private(set) var runs = 0
    /// Timer firings (each a wake-up of the device for keep-alives), for status and tests.
    private(set) var timerWakes = 0
    private var nextID = 1

    /// No keep-alives yet; `timer` will wake the earliest.
    init(timer: AgentTimer) { self.timer = timer }

    /// A new keep-alive id.
    func makeID() -> String {
        defer { nextID += 1 }
        runs += 1
        return "keepalive-\(nextID)"
    }

    /// The timer fired.
    func timerFired() { timerWakes += 1 }
}
