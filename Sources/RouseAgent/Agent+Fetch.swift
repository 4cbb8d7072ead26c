import FoundationEssentials
import Logging
import RouseAgentCore
import RouseSystem
import RouseWire

/// The agent's steps for background fetch: when fetches are due, starting and ending them. Their schedules and the
/// fetch each handler runs are in ``Fetches``.
extension Agent {
    /// At start: a scheduler for each handler that fetches.
    func startFetch() {
        for name in handlers.names {
            guard let minimum = handlers.configuration(of: name)?.fetchMinimum else { continue }
            fetches.schedule(name, minimum: minimum, now: now)
        }
        armFetchTimer()
    }

    /// Whether background fetch may run: the gateway is reachable and the device is not on a low battery (power,
    /// docs/agent.md: on battery below 20 %, fetch waits as iOS's Low Power Mode stops Background App Refresh).
    var fetchUsable: Bool { link.reachable && !session.lowPower }

    /// One timer, at the earliest preferred fetch; none while the network is unusable or the battery low. An armed timer due no later is
    /// kept (a cancelled sleep would still wake the agent at its deadline).
    func armFetchTimer() {
        guard let next = fetches.nextTimer(networkUsable: fetchUsable) else { return }
        fetches.timer.arm(at: time.instant(next)) { await self.fetchTimerFired($0) }
    }

    private func fetchTimerFired(_ generation: UInt64) {
        guard fetches.timer.fired(generation) else { return }
        fetchOpportunity(wakeUp: false)
    }

    /// Fetches what is due; `wakeUp`: something else woke the device (a channel opening, the network returning), so
    /// handlers in the second half of their wait fetch with it. A handler fetching at its own time is such a wake-up
    /// for the others.
    func fetchOpportunity(wakeUp: Bool) {
        let current = now
        var woke = wakeUp
        for name in fetches.due(now: current, networkUsable: fetchUsable, wakeUp: false) {
            beginFetch(name)
            woke = true
        }
        if woke {
            for name in fetches.due(now: current, networkUsable: fetchUsable, wakeUp: true) {
                beginFetch(name)
            }
        }
        armFetchTimer()
    }

    private func beginFetch(_ name: String) {
        guard handlers.contains(name) else { return }
        let id = fetches.makeID()
        let now = now
        guard let (started, actions) = handlers.step(name, { $0.fetch(id: id, now: now) }) else { return }
        guard started else {
            fetches.skipped(name, now: now)
            return
        }
        fetches.started(name, now: now)
        apply(name, actions)
        fetches.run(name, Fetches.Running(id: id, ioAtStart: handlerIO(name)))
        logger.info("background fetch", metadata: ["handler": "\(name)", "fetch-id": "\(id)"])
        sendFetch(name)
    }

    /// Sends the running fetch to `name` when connected (after a launch: when it registers).
    func sendFetch(_ name: String) {
        guard let running = fetches.running(name), handlers.machine(of: name)?.openFetches[running.id] != nil,
            let connection = handlers.connection(of: name)
        else { return }
        let seconds = handlers.configuration(of: name)?.rules.backgroundDeadline ?? .seconds(30)
        connection.send(.fetch(.init(fetchID: running.id, seconds: Double(seconds.components.seconds))))
    }

    /// `fetchComplete` from `name`.
    func fetchCompleted(
        _ name: String, _ connection: IPCConnection, _ request: AgentRequest.FetchComplete, requestID: Int?
    ) {
        guard let id = request.fetchID, let result = request.result.flatMap(BackgroundFetchResult.init(rawValue:)),
            fetches.running(name)?.id == id
        else {
            connection.sendError(
                "badRequest", "fetchComplete needs the running fetch's fetchID and result newData|noData|failed",
                requestID: requestID)
            return
        }
        apply(name, handlers.step(name) { $0.fetchCompleted(id: id, now: now) })
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
        if fetches.running(name) != nil { endFetch(name, .timedOut) }
    }

    private func endFetch(_ name: String, _ outcome: FetchScheduler.Outcome) {
        guard let running = fetches.ended(name) else { return }
        let io = running.ioAtStart.flatMap { start in handlerIO(name).map { $0 - start } } ?? handlerIO(name) ?? 0
        let factor = fetches.record(name, outcome, bytes: io, now: now)
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
        guard let pid = handlers.process(of: name)?.pid ?? handlers.connection(of: name)?.peer?.pid,
            let text = Sys.readText("/proc/\(pid)/io")
        else { return nil }
        var total: Int64 = 0
        for line in text.split(separator: "\n") where line.hasPrefix("rchar:") || line.hasPrefix("wchar:") {
            total += Int64(line.split(separator: " ").last ?? "") ?? 0
        }
        return total
    }

    /// `rouse agent status`: the next planned fetch and the history that set it.
    func fetchStatus(_ name: String) -> AgentStatus.Fetch? {
        fetches.status(name, now: now, networkUsable: fetchUsable)
    }
}

extension Agent {
    /// Waits for the fetch timer when its deadline has passed (tests, after advancing a manual clock).
    package func settleFetchTimer() async {
        while let due = fetches.timer.due { await due.value }
    }
}
