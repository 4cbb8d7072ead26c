import Foundation
import Logging
import RouseAgentCore
import RouseWire

/// Background fetch's shell state: a ``FetchScheduler`` per handler that declares `fetch-minimum-seconds`
/// and the fetch each one runs (the one timer for all of them is ``Agent/fetchTimer``).
struct FetchShell {
    struct Running {
        let id: String
        /// The handler's `rchar + wchar` at the start (`/proc/<pid>/io`), nil when it was not running.
        let ioAtStart: Int64?
    }
    var schedulers: [String: FetchScheduler] = [:]
    var running: [String: Running] = [:]
    var nextID = 1
}

extension Agent {
    /// At start: a scheduler for each handler that fetches.
    func startFetch() {
        for name in slots.keys.sorted() {
            guard let minimum = slots[name]?.configuration.fetchMinimum else { continue }
            fetches.schedulers[name] = FetchScheduler(minimum: minimum, now: now)
        }
        armFetchTimer()
    }

    /// One timer, at the earliest preferred fetch; none while the network is unusable. An armed timer due no later is
    /// kept (a cancelled sleep would still wake the agent at its deadline).
    func armFetchTimer() {
        let next = fetches.schedulers.values.compactMap { $0.nextTimer(networkUsable: gatewayReachable) }.min()
        guard let next else { return }
        fetchTimer.arm(at: instant(next)) { await self.fetchTimerFired() }
    }

    private func fetchTimerFired() {
        fetchTimer.fired()
        fetchOpportunity(wakeUp: false)
    }

    /// Fetches what is due; `wakeUp`: something else woke the device (a channel opening, the network returning), so
    /// handlers in the second half of their wait fetch with it. A handler fetching at its own time is such a wake-up
    /// for the others.
    func fetchOpportunity(wakeUp: Bool) {
        let current = now
        var woke = wakeUp
        for name in fetches.schedulers.keys.sorted()
        where fetches.schedulers[name]!.due(now: current, networkUsable: gatewayReachable, wakeUp: false) {
            beginFetch(name)
            woke = true
        }
        if woke {
            for name in fetches.schedulers.keys.sorted()
            where fetches.schedulers[name]!.due(now: current, networkUsable: gatewayReachable, wakeUp: true) {
                beginFetch(name)
            }
        }
        armFetchTimer()
    }

    private func beginFetch(_ name: String) {
        guard slots[name] != nil else { return }
        let id = "fetch-\(fetches.nextID)"
        fetches.nextID += 1
        let (started, actions) = slots[name]!.machine.fetch(id: id, now: now)
        guard started else {
            fetches.schedulers[name]?.skipped(now: now)
            return
        }
        fetches.schedulers[name]?.started(now: now)
        apply(name, actions)
        fetches.running[name] = FetchShell.Running(id: id, ioAtStart: handlerIO(name))
        logger.info("background fetch", metadata: ["handler": "\(name)", "fetch-id": "\(id)"])
        sendFetch(name)
    }

    /// Sends the running fetch to `name` when connected (after a launch: when it registers).
    func sendFetch(_ name: String) {
        guard let running = fetches.running[name], slots[name]?.machine.openFetches[running.id] != nil,
            let connection = slots[name]?.connection
        else { return }
        let seconds = slots[name]?.configuration.rules.backgroundDeadline ?? .seconds(30)
        connection.send(.fetch(.init(fetchID: running.id, seconds: Double(seconds.components.seconds))))
    }

    /// `fetchComplete` from `name`.
    func fetchCompleted(
        _ name: String, _ connection: IPCConnection, _ request: AgentRequest.FetchComplete, requestID: Int?
    ) {
        guard let id = request.fetchID, let result = request.result.flatMap(BackgroundFetchResult.init(rawValue:)),
            fetches.running[name]?.id == id
        else {
            connection.sendError(
                "badRequest", "fetchComplete needs the running fetch's fetchID and result newData|noData|failed",
                requestID: requestID)
            return
        }
        apply(name, slots[name]!.machine.fetchCompleted(id: id, now: now))
        let outcome: FetchScheduler.Outcome =
            switch result {
            case .newData: .newData
            case .noData: .noData
            case .failed: .failed
            }
        endFetch(name, outcome)
        connection.send(.ok(.init()), requestID: requestID)
    }

    /// The handler exited or disconnected: a fetch it did not complete counts as timed out.
    func fetchHandlerGone(_ name: String) {
        if fetches.running[name] != nil { endFetch(name, .timedOut) }
    }

    private func endFetch(_ name: String, _ outcome: FetchScheduler.Outcome) {
        guard let running = fetches.running.removeValue(forKey: name) else { return }
        let io = running.ioAtStart.flatMap { start in handlerIO(name).map { $0 - start } } ?? handlerIO(name) ?? 0
        let factor = fetches.schedulers[name]?.ended(outcome, bytes: io, now: now)
        logger.info(
            "background fetch ended",
            metadata: [
                "handler": "\(name)", "fetch-id": "\(running.id)", "result": "\(outcome.rawValue)", "bytes": "\(io)",
                "factor": "\(factor ?? 0)",
            ])
        armFetchTimer()
    }

    /// The handler's bytes read and written (`rchar + wchar` of `/proc/<pid>/io`): what it moved during a fetch. An
    /// approximation (files count too); nil when it is not running.
    private func handlerIO(_ name: String) -> Int64? {
        guard let pid = slots[name]?.process?.pid ?? slots[name]?.connection?.peer?.pid,
            let text = AgentSyscalls.readFile("/proc/\(pid)/io")
        else { return nil }
        var total: Int64 = 0
        for line in text.split(separator: "\n") where line.hasPrefix("rchar:") || line.hasPrefix("wchar:") {
            total += Int64(line.split(separator: " ").last ?? "") ?? 0
        }
        return total
    }

    /// `rouse agent status`: the next planned fetch and the history that set it.
    func fetchStatus(_ name: String) -> AgentStatus.Fetch? {
        guard let scheduler = fetches.schedulers[name] else { return nil }
        return AgentStatus.Fetch(
            minimumSeconds: FetchScheduler.seconds(scheduler.minimum), factor: scheduler.factor,
            nextInSeconds: gatewayReachable ? max(0, FetchScheduler.seconds(scheduler.preferred - now)) : nil,
            running: fetches.running[name]?.id, history: scheduler.history)
    }
}
