import RouseAgentCore

/// Background fetch's state: a ``FetchScheduler`` per handler that declares `fetch-minimum-seconds`, the fetch each
/// one runs, and the one timer for all of them. Owned by the ``Agent`` and touched only on its isolation; the agent's
/// steps in `Agent+Fetch.swift` start and end fetches through it.
final class Fetches {
    /// A fetch under way.
    struct Running {
        let id: String
        /// The handler's `rchar + wchar` at the start (`/proc/<pid>/io`), nil when it was not running.
        let ioAtStart: Int64?
    }

    private var schedulers: [String: FetchScheduler] = [:]
    private var running: [String: Running] = [:]
    private var nextID = 1
    /// The one timer, at the earliest preferred fetch.
    let timer: AgentTimer

    /// No handler fetches yet; `timer` will wake the earliest.
    init(timer: AgentTimer) { self.timer = timer }

    /// Handler `name` fetches at least `minimum` apart.
    func schedule(_ name: String, minimum: Duration, now: Duration) {
        schedulers[name] = FetchScheduler(minimum: minimum, now: now)
    }

    /// The earliest preferred fetch (none while the network is unusable).
    func nextTimer(networkUsable: Bool) -> Duration? {
        schedulers.values.compactMap { $0.nextTimer(networkUsable: networkUsable) }.min()
    }

    /// The handlers whose fetch is due, by name; `wakeUp`: something else woke the device.
    func due(now: Duration, networkUsable: Bool, wakeUp: Bool) -> [String] {
        schedulers.keys.sorted().filter { name in
            schedulers[name]?.due(now: now, networkUsable: networkUsable, wakeUp: wakeUp) == true
        }
    }

    /// A new fetch id.
    func makeID() -> String {
        defer { nextID += 1 }
        return "fetch-\(nextID)"
    }

    /// `name`'s rules refused the fetch (it counts as done for its schedule).
    func skipped(_ name: String, now: Duration) { schedulers[name]?.skipped(now: now) }

    /// `name`'s rules took a fetch.
    func started(_ name: String, now: Duration) { schedulers[name]?.started(now: now) }

    /// `name` runs fetch `running`.
    func run(_ name: String, _ running: Running) { self.running[name] = running }

    /// The fetch `name` runs.
    func running(_ name: String) -> Running? { running[name] }

    /// `name`'s fetch ended: no longer running.
    func ended(_ name: String) -> Running? { running.removeValue(forKey: name) }

    /// Records how `name`'s fetch went and the bytes it moved; returns the factor its schedule now applies.
    func record(_ name: String, _ outcome: FetchScheduler.Outcome, bytes: Int64, now: Duration) -> Double? {
        schedulers[name]?.ended(outcome, bytes: bytes, now: now)
    }

    /// `rouse agent status`: `name`'s next planned fetch and the history that set it.
    func status(_ name: String, now: Duration, networkUsable: Bool) -> AgentStatus.Fetch? {
        guard let scheduler = schedulers[name] else { return nil }
        return AgentStatus.Fetch(
            minimumSeconds: FetchScheduler.seconds(scheduler.minimum), factor: scheduler.factor,
            nextInSeconds: networkUsable ? max(0, FetchScheduler.seconds(scheduler.preferred - now)) : nil,
            running: running[name]?.id, history: scheduler.history)
    }
}
