import FoundationEssentials
import Logging
import RouseAgentCore
import RouseClock
import RouseDBus
import RouseState
import RouseText
import RouseWire

/// Session integration (docs/agent.md, "Session integration"): logind's lock state drives the key ring and tells
/// handlers about protected data; pushes wait for the first unlock in per-user mode; handlers' protected files.
extension Agent {
    /// Connects to logind and follows the session's lock state. Without a reachable logind or session, the session
    /// counts as unlocked (logged): a machine without logind must not hold every push for ever.
    func startSession() async {
        guard let integration = configuration.session else { return }
        do throws(DBusError) {
            let connection = try await DBusConnection.connect(integration.systemBus)
            session.connection = connection
            await startPower(connection)
            await watchSystemShutdown(connection)
            let logind = Logind(connection: connection)
            guard let entry = try await logind.session(uid: integration.uid, preferredID: integration.sessionID) else {
                logger.warning("no logind session to follow: counted as unlocked")
                sessionReport(locked: false, initial: true)
                return
            }
            session.sessionPath = entry.path
            session.registrations += try await logind.watchLock(session: entry.path) { event in
                Task { await self.sessionLockEvent(event) }
            }
            let locked = try await logind.lockedHint(session: entry.path)
            logger.info(
                "following the session's lock", metadata: ["session": "\(entry.id)", "locked": "\(locked)"])
            sessionReport(locked: locked, initial: true)
        } catch {
            logger.warning("logind unreachable: counted as unlocked", metadata: ["error": "\(error)"])
            sessionReport(locked: false, initial: true)
        }
    }

    /// Ends the subscriptions and the connection.
    func stopSession() async {
        session.timer.cancel()
        for registration in session.registrations { await registration.cancel() }
        session.registrations = []
        await session.connection?.close()
        session.connection = nil
    }

    func sessionLockEvent(_ event: Logind.LockEvent) {
        session.counted()
        logger.info("session lock event", metadata: ["event": "\(event)"])
        switch event {
        case .lock, .lockedHint(true): sessionReport(locked: true, initial: false)
        case .unlock, .lockedHint(false): sessionReport(locked: false, initial: false)
        }
    }

    /// Feeds the lock machine (made at the first report) and performs its actions.
    private func sessionReport(locked: Bool, initial: Bool) {
        let seconds = now.inSeconds
        guard var machine = session.machine else {
            let grace = configuration.session?.lockGrace.inSeconds ?? 0.5
            let machine = SessionLockMachine(locked: locked, grace: grace)
            session.machine = machine
            persistence?.ring.report(locked ? .locked : .unlocked)
            if !locked { releaseHeldPushes() }
            return
        }
        let actions = locked ? machine.locked(now: seconds) : machine.unlocked(now: seconds)
        session.machine = machine
        performSession(actions)
    }

    private func sessionTimerFired(_ generation: UInt64) {
        guard session.timer.fired(generation), var machine = session.machine else { return }
        let actions = machine.tick(now: now.inSeconds)
        session.machine = machine
        performSession(actions)
    }

    private func performSession(_ actions: [SessionLockMachine.Action]) {
        for action in actions {
            switch action {
            case .tellWillBecomeUnavailable:
                let grace = Int(((configuration.session?.lockGrace ?? .milliseconds(500)).inSeconds * 1000).rounded())
                tellHandlers(.protectedData(.init(state: .willBecomeUnavailable, graceMilliseconds: grace)))
            case .armTimer(let deadline):
                session.timer.arm(at: time.instant(.seconds(deadline))) { await self.sessionTimerFired($0) }
            case .cancelTimer:
                session.timer.cancel()
            case .dropKeys:
                persistence?.ring.report(.locked)
                logger.info("protected data unavailable: complete keys dropped")
            case .loadKeys:
                persistence?.ring.report(.unlocked)
                logger.info("protected data available: keys derived")
            case .tellDidBecomeAvailable:
                tellHandlers(.protectedData(.init(state: .didBecomeAvailable)))
            case .firstUnlock:
                releaseHeldPushes()
            }
        }
    }

    private func tellHandlers(_ event: AgentEvent) {
        for name in handlers.names {
            _ = handlers.connection(of: name)?.send(event)
        }
    }

    // MARK: Pushes before the first unlock

    /// True when `push` was kept for the first unlock (or left unacknowledged, the budget spent): the caller stops.
    func heldForFirstUnlock(_ push: AgentPush) -> Bool {
        guard session.mustHold(configuration.session) else { return false }
        let limit = configuration.session?.maximumHeldPushes ?? 0
        if session.hold(push, limit: limit) {
            logger.info("push waits for the first unlock", metadata: ["push-id": "\(push.id)"])
        } else {
            logger.warning(
                "push left unacknowledged: too many wait for the first unlock", metadata: ["push-id": "\(push.id)"])
        }
        return true
    }

    private func releaseHeldPushes() {
        let held = session.held
        session.held = []
        guard !held.isEmpty else { return }
        logger.info("first unlock: waiting pushes delivered", metadata: ["count": "\(held.count)"])
        Task {
            for push in held { await self.received(push) }
        }
    }

    // MARK: Protected files

    /// The largest protected file a handler may write (decoded).
    static let protectedFileLimit = 256 * 1024

    func protectedFile(
        _ name: String, _ connection: IPCConnection, _ request: AgentRequest.ProtectedFile, requestID: Int?
    ) {
        guard let persistence else {
            connection.sendError("protectedDataUnavailable", "this agent keeps no sealed state", requestID: requestID)
            return
        }
        guard let op = request.op, let file = request.name, Self.validProtectedName(file) else {
            connection.sendError(
                "badRequest", "protectedFile needs op and a name of 1-64 [A-Za-z0-9._-], not starting with a dot",
                requestID: requestID)
            return
        }
        let protection = request.protection.flatMap(ProtectionClass.init(rawValue:))
        if request.protection != nil && protection == nil {
            connection.sendError(
                "badRequest", "protection is none, until-first-unlock, complete or complete-unless-open",
                requestID: requestID)
            return
        }
        let root = PathText.parent(persistence.archives.directory)
        let kind = Self.protectedKind
        // The parent, as the agent's other state directories: 0700 (the store makes its own directory 0700).
        try? FileManager.default.createDirectory(
            atPath: root + "/protected", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        do throws(StateError) {
            let store = try SealedStore(
                directory: root + "/protected/" + name, keys: persistence.ring, logger: logger)
            if let handle = request.handle {
                try throughOpenFile(name, connection, request, handle: handle, store: store, requestID: requestID)
                return
            }
            switch op {
            case .open:
                try openProtected(name, connection, file, create: protection, store: store, requestID: requestID)
            case .close:
                connection.sendError("badRequest", "close needs the open file's handle", requestID: requestID)
            case .write:
                guard let protection, let text = request.data, let data = Data(base64Encoded: text),
                    data.count <= Self.protectedFileLimit
                else {
                    connection.sendError(
                        "badRequest", "write needs protection and data (base64, at most 256 KiB)", requestID: requestID)
                    return
                }
                try store.write(Array(data), name: file, kind: kind, protection: protection)
                connection.send(
                    .protectedFileReply(.init(name: file, protection: protection.rawValue)), requestID: requestID)
            case .read:
                guard let bytes = try store.read(name: file, kind: kind) else {
                    connection.sendError("notFound", "no protected file \(file)", requestID: requestID)
                    return
                }
                connection.send(
                    .protectedFileReply(
                        .init(name: file, data: Data(bytes).base64EncodedString())),
                    requestID: requestID)
            case .reclass:
                guard let protection else {
                    connection.sendError("badRequest", "reclass needs protection", requestID: requestID)
                    return
                }
                guard let bytes = try store.read(name: file, kind: kind) else {
                    connection.sendError("notFound", "no protected file \(file)", requestID: requestID)
                    return
                }
                try store.write(bytes, name: file, kind: kind, protection: protection)
                connection.send(
                    .protectedFileReply(.init(name: file, protection: protection.rawValue)), requestID: requestID)
            case .remove:
                session.openFiles.closeAll(named: file, handler: name)
                guard try store.remove(file) else {
                    connection.sendError("notFound", "no protected file \(file)", requestID: requestID)
                    return
                }
                connection.send(.protectedFileReply(.init(name: file)), requestID: requestID)
            }
        } catch {
            if error.isLocked {
                connection.sendError(
                    "protectedDataUnavailable", "\(file): its class's key is not held (session locked)",
                    requestID: requestID)
            } else {
                logger.warning(
                    "protected file refused", metadata: ["handler": "\(name)", "file": "\(file)", "error": "\(error)"])
                connection.sendError("badRequest", "\(error)", requestID: requestID)
            }
        }
    }

    static func validProtectedName(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count), !name.hasPrefix(".") else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}

extension Agent {
    /// Waits for the lock grace timer when its deadline has passed (tests, after advancing a manual clock).
    package func settleSessionTimer() async {
        while let due = session.timer.due { await due.value }
    }

    /// The lock machine's phase, for tests and status: `unlocked`, `closing`, `locked`, or nil without integration.
    package var sessionPhase: SessionLockMachine.Phase? { session.machine?.phase }

    /// Pushes waiting for the first unlock (tests, status).
    package var heldPushCount: Int { session.held.count }
}

// MARK: Power (UPower)

extension Agent {
    /// Reads UPower and follows its changes; without UPower (a desktop-less device) power is not counted.
    func startPower(_ connection: DBusConnection) async {
        let upower = UPower(connection: connection)
        do throws(DBusError) {
            session.registrations += try await upower.watch { Task { await self.powerChanged() } }
            powerRead(try await upower.state())
        } catch {
            logger.info("no UPower: power not counted", metadata: ["error": "\(error)"])
        }
    }

    private func powerChanged() async {
        guard let connection = session.connection else { return }
        guard let state = try? await UPower(connection: connection).state() else { return }
        powerRead(state)
    }

    private func powerRead(_ state: UPower.PowerState) {
        guard state != session.power else { return }
        let wasExpensive = session.expensive
        let wasLow = session.lowPower
        session.power = state
        logger.info(
            "power", metadata: ["on-battery": "\(state.onBattery)", "percentage": "\(state.percentage ?? -1)"])
        if session.expensive != wasExpensive { transfersNetwork(expensive: session.expensive) }
        unifiedPushConditionsChanged()
        if session.lowPower != wasLow {
            logger.info("background fetch power", metadata: ["waits": "\(session.lowPower)"])
            // Back on AC (or charged): overdue fetches run now; either way the fetch timer follows.
            fetchOpportunity(wakeUp: false)
        }
    }

    /// Reachability's verdict on the path's cost, joined with the battery for discretionary transfers.
    func pathExpensive(_ expensive: Bool) {
        session.pathExpensive = expensive
        transfersNetwork(expensive: session.expensive)
        unifiedPushConditionsChanged()
    }
}

extension Agent {
    /// Whether discretionary transfers see an expensive network now (tests).
    package var transfersExpensive: Bool { transfers.networkExpensive }
}
