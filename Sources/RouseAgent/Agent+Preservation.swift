import FoundationEssentials
import Logging
import RouseActivation
import RouseAgentCore
import RouseState
import RouseWire

/// The agent's steps for state preservation: the handlers' archives and the agent's own, offers and answers, the
/// requests to preserve before a suspension or termination. The per-handler flags and the waits are in
/// ``Preservations``; the archives in ``AgentPersistence``.
extension Agent {
    /// Name of the agent's own archive.
    static let ownArchive = "rouse-agent"
    /// Format of the agent's own pieces; an archive with another writer version is discarded.
    static let ownArchiveVersion = "rouse-agent-state/1"
    /// The agent's version, stored in every archive.
    package static let version = "0.8.0"

    // MARK: Handler → agent

    /// After `register`: records the opt-in; at the first registration of a launch, `beginLaunch` and the
    /// offer of what was preserved, then `finishLaunch` after the grace period if it is still up.
    func registeredForPreservation(_ name: String, _ connection: IPCConnection, optIn: Bool) {
        guard let persistence, handlers.contains(name) else { return }
        let metadata: Logger.Metadata = ["handler": "\(name)"]
        let beginning = preservations.registered(name, optIn: optIn)
        guard optIn else {
            if beginning, (try? persistence.preservation.forget(handler: name)) == nil {
                logger.warning("preserved state not forgotten", metadata: metadata)
            }
            return
        }
        guard beginning else { return }
        do {
            // The guide's rule: one launch that crashed during restoration discards the state (docs/state.md).
            if let offer = try persistence.preservation.beginLaunch(
                handler: name, crashLimit: RestorationStateMachine.crashLimit)
            {
                preservations.offer(offer, to: name)
                let pieces = Dictionary(
                    offer.pieces.map { ($0.path.description, Data($0.data).base64EncodedString()) },
                    uniquingKeysWith: { $1 })
                connection.send(
                    .restoration(
                        .init(
                            pieces: pieces, version: offer.info.writerVersion, agentVersion: offer.info.agentVersion)))
            }
        } catch {
            logger.error("preserved state not offered", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
        let grace = configuration.restorationGrace
        let clock = time.clock
        Task {
            try? await clock.sleep(for: grace)
            self.finishLaunch(name, connection)
        }
    }

    func finishLaunch(_ name: String, _ connection: IPCConnection) {
        guard let persistence, handlers.connection(of: name) === connection else { return }
        do {
            try persistence.preservation.finishLaunch(handler: name)
            logger.info("handler launch finished", metadata: ["handler": "\(name)"])
        } catch {
            logger.error("launch not finished", metadata: ["handler": "\(name)", "error": "\(error)"])
        }
    }

    /// The handler's process (or, for one the agent did not launch, its connection) ended before its launch
    /// finished: a crashed launch for the crash-loop rule.
    func launchAbandoned(_ name: String) {
        guard let persistence else { return }
        do {
            try persistence.preservation.launchAbandoned(handler: name)
        } catch {
            logger.error("launch not recorded as abandoned", metadata: ["handler": "\(name)", "error": "\(error)"])
        }
    }

    /// `preserve`: every piece checked first (base64, path); one bad piece ⇒ a precise error and nothing
    /// stored (the previous archive stays).
    func preserveReceived(_ name: String, _ connection: IPCConnection, _ message: AgentRequest.Preserve) {
        defer { preservations.wake(name) }
        guard let persistence else {
            connection.sendError("unavailable", "this agent keeps no preserved state")
            return
        }
        guard let encoded = message.pieces, let version = message.version else {
            connection.sendError("badRequest", "preserve needs pieces and version")
            return
        }
        var archive = PreservationArchive(
            info: .init(
                handler: name, writerVersion: version, agentVersion: Self.version,
                createdAt: wallMilliseconds / 1000))
        for (text, data) in encoded.sorted(by: { $0.key < $1.key }) {
            guard let bytes = Data(base64Encoded: data) else {
                connection.sendError("badRequest", "piece \(text): data is not base64; nothing preserved")
                return
            }
            do {
                archive.preserve(Array(bytes), at: try RestorationPath(text))
            } catch {
                connection.sendError("badRequest", "piece \(text): \(error); nothing preserved")
                return
            }
        }
        let orphans = archive.orphans.map(\.description)
        preservations.optedIn(name)
        do {
            guard try persistence.preservation.preserve(archive) else {
                connection.sendError(
                    "quitByUser", "the user quit this handler: nothing is preserved until it is launched again")
                return
            }
        } catch {
            logger.error("preserved state not stored", metadata: ["handler": "\(name)", "error": "\(error)"])
            connection.sendError("storeFailed", "\(error)")
            return
        }
        let kept = archive.preservedPieces.count
        preservations.countStored()
        logger.info(
            "handler state preserved",
            metadata: ["handler": "\(name)", "pieces": "\(kept)", "orphans": "\(orphans.count)"])
        let detail =
            "\(kept) pieces preserved" + (orphans.isEmpty ? "" : "; dropped (parent not preserved): \(orphans)")
        connection.send(.preserved(.init(detail: detail)))
    }

    /// `restoreReply`: the handler's answer to the offer, run through the restoration rules.
    func restoreReplied(_ name: String, _ connection: IPCConnection, _ message: AgentRequest.RestoreReply) {
        guard let persistence, let offer = preservations.takeOffer(name) else {
            connection.sendError("badRequest", "no restoration is on offer")
            return
        }
        var metadata: Logger.Metadata = ["handler": "\(name)"]
        do {
            guard message.accepted == true else {
                try persistence.preservation.refuse(handler: name)
                logger.info("handler refused its preserved state", metadata: metadata)
                return
            }
            let skipped = Set(message.skipped ?? [])
            let failedAt = message.failedAt
            let outcome = try persistence.preservation.restore(
                offer, identify: { skipped.contains($0.description) ? nil : $0 },
                apply: { path, _ in
                    if path.description == failedAt { throw AgentError.identity("the handler's restore failed") }
                })
            metadata["restored"] = "\(outcome.restored.count)"
            metadata["skipped"] = "\(outcome.skipped.count)"
            metadata["failed-at"] = "\(outcome.failedAt?.description ?? "-")"
            logger.info("handler restoration answered", metadata: metadata)
            preservations.countAnswered()
        } catch {
            logger.error("restoration answer not recorded", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
    }

    /// The user quit `name` (`userControl` stopped): its preserved state is deleted, none kept until it is
    /// launched again.
    func quitByUser(_ name: String) {
        guard let persistence else { return }
        do {
            try persistence.preservation.quitByUser(handler: name)
        } catch {
            logger.error("preserved state not deleted", metadata: ["handler": "\(name)", "error": "\(error)"])
        }
    }

    // MARK: Agent → handler

    /// Defers `.suspend` or `.kill` of an opted-in, connected handler until it answered a `preserveRequest`
    /// (or ``AgentConfiguration/preserveTimeout`` passed); the agent preserves its own state then too.
    /// Returns whether the action was deferred.
    func preservationDefers(_ name: String, _ action: HandlerAction) -> Bool {
        guard persistence != nil, handlers.contains(name) else { return false }
        let flags = preservations.flags(of: name)
        if flags.asked {
            preservations.setAsked(name, false)
            return false
        }
        let reason: String
        switch action {
        case .suspend: reason = "suspend"
        case .kill(let why):
            // The user quit it: nothing to preserve (quitByUser deleted it).
            if why == .userStopped { return false }
            reason = "terminate"
        default: return false
        }
        preserveAgentState()
        guard flags.optedIn, handlers.connection(of: name) != nil else { return false }
        Task {
            await self.askToPreserve(name, reason: reason)
            self.performDeferred(name, action)
        }
        return true
    }

    private func performDeferred(_ name: String, _ action: HandlerAction) {
        guard handlers.process(of: name) != nil || handlers.connection(of: name) != nil else { return }
        // A push may have resumed the handler while it was preserving: then it is not suspended any more.
        if action == .suspend && handlers.machine(of: name)?.lifecycle != .suspended { return }
        preservations.setAsked(name, true)
        perform(name, action)
        preservations.setAsked(name, false)
    }

    /// Sends `preserveRequest` and waits for the `preserve` answer, at most the preserve timeout.
    func askToPreserve(_ name: String, reason: String) async {
        guard let connection = handlers.connection(of: name) else { return }
        guard connection.send(.preserveRequest(.init(reason: reason))) else { return }
        logger.debug("preservation requested", metadata: ["handler": "\(name)", "reason": "\(reason)"])
        let timeout = configuration.preserveTimeout
        let clock = time.clock
        await withCheckedContinuation { continuation in
            let id = preservations.wait(for: name, continuation)
            Task {
                try? await clock.sleep(for: timeout)
                self.expirePreserveWaiter(id)
            }
        }
    }

    private func expirePreserveWaiter(_ id: Int) {
        guard let handler = preservations.expire(id) else { return }
        logger.notice("no preserve answer in time", metadata: ["handler": "\(handler)"])
    }

    /// A handler went to the background: it is asked to preserve (no wait), the agent preserves its own.
    func wentToBackground(_ name: String) {
        guard persistence != nil else { return }
        preserveAgentState()
        guard preservations.flags(of: name).optedIn else { return }
        Task { await self.askToPreserve(name, reason: "background") }
    }

    /// Asks every running opted-in handler to preserve and waits for the answers (the benchmark's preserve).
    package func preserveHandlers() async { await preserveAll(reason: "background") }

    /// At shutdown: every opted-in, running (not frozen) handler is asked at once, answers awaited (each at
    /// most the timeout), then the agent's own state is preserved.
    func preserveAll(reason: String) async {
        guard persistence != nil else { return }
        let names = handlers.names.filter { name in
            preservations.flags(of: name).optedIn && handlers.connection(of: name) != nil
                && handlers.machine(of: name)?.lifecycle != .suspended
        }
        await withTaskGroup(of: Void.self) { group in
            for name in names { group.addTask { await self.askToPreserve(name, reason: reason) } }
        }
        preserveAgentState()
    }

    // MARK: The agent's own state

    /// Preserves the agent's own archive: `handlers/<name>` (lifecycle, strikes, held push, budget, calls),
    /// `reachability`, and `activations` (the arbiter's snapshot).
    func preserveAgentState() {
        guard let persistence else { return }
        var archive = PreservationArchive(
            info: .init(
                handler: Self.ownArchive, writerVersion: Self.ownArchiveVersion, agentVersion: Self.version,
                createdAt: wallMilliseconds / 1000))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            let handlers = try RestorationPath("handlers")
            archive.preserve([], at: handlers)
            let current = now
            for name in self.handlers.names {
                guard let machine = self.handlers.machine(of: name) else { continue }
                let snapshot = machine.snapshot(now: current, wallEpochMilliseconds: time.wallEpochMilliseconds)
                archive.preserve(Array(try encoder.encode(snapshot)), at: try handlers.appending(name))
            }
            archive.preserve([link.reachable ? 1 : 0], at: try RestorationPath("reachability"))
            archive.preserve(Array(activations.snapshot.json().utf8), at: try RestorationPath("activations"))
            try persistence.preservation.preserve(archive)
        } catch {
            logger.error("agent state not preserved", metadata: ["error": "\(error)"])
        }
    }

    /// At start: the agent's own archive (offered once; discarded on another version or after two launches
    /// that crashed). A piece for a handler no longer configured is skipped; a piece that does not decode
    /// fails the restore, and the agent starts clean. `finishLaunch` after the grace period.
    func restoreAgentState() {
        guard let persistence else { return }
        let decoder = JSONDecoder()
        do {
            let offer = try persistence.preservation.beginLaunch(handler: Self.ownArchive) {
                $0.writerVersion == Self.ownArchiveVersion
            }
            if let offer {
                var snapshots: [String: HandlerMachine.Snapshot] = [:]
                var reachable: Bool?
                var activations: ActivationSnapshot?
                let outcome = try persistence.preservation.restore(
                    offer,
                    identify: { path -> RestorationPath? in
                        switch (path.components.first, path.components.count) {
                        case ("handlers", 1), ("reachability", 1), ("activations", 1): path
                        case ("handlers", 2): self.handlers.contains(path.identifier) ? path : nil
                        default: nil
                        }
                    },
                    apply: { path, data in
                        switch path.components.first {
                        case "handlers" where path.components.count == 2:
                            snapshots[path.identifier] = try decoder.decode(
                                HandlerMachine.Snapshot.self, from: Data(data))
                        case "reachability": reachable = data.first == 1
                        case "activations":
                            activations = try decoder.decode(ActivationSnapshot.self, from: Data(data))
                        default: break
                        }
                    })
                if outcome.failedAt == nil {
                    let current = now
                    for (name, snapshot) in snapshots {
                        let running = self.handlers.process(of: name) != nil
                        _ = self.handlers.step(name) { machine in
                            machine.restore(snapshot, now: current, running: running)
                            return []
                        }
                        if let held = snapshot.held { _ = link.beginDelivery(held.id) }
                    }
                    if let reachable { _ = link.reachability(reachable) }
                    if let activations { restoreActivations(activations) }
                    logger.info(
                        "agent state restored",
                        metadata: ["handlers": "\(snapshots.count)", "skipped": "\(outcome.skipped.count)"])
                }
            }
        } catch {
            logger.error("agent state not restored", metadata: ["error": "\(error)"])
        }
        let grace = configuration.restorationGrace
        let clock = time.clock
        Task {
            try? await clock.sleep(for: grace)
            self.finishOwnLaunch()
        }
    }

    private func finishOwnLaunch() {
        guard let persistence, listener >= 0 else { return }
        do {
            try persistence.preservation.finishLaunch(handler: Self.ownArchive)
            logger.info("agent launch finished")
        } catch {
            logger.error("agent launch not finished", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Key rotation

    /// `rotateKey` (admin): re-seals every file under a new data key, inside the actor (no write in flight).
    func rotateKey(_ connection: IPCConnection, requestID: Int?) {
        guard let persistence else {
            connection.sendError("unavailable", "this agent keeps no sealed files", requestID: requestID)
            return
        }
        do {
            let id = try persistence.rotateKey()
            connection.send(.ok(.init(detail: id)), requestID: requestID)
        } catch {
            logger.error("key rotation failed", metadata: ["error": "\(error)"])
            connection.sendError("rotationFailed", "\(error)", requestID: requestID)
        }
    }
}
