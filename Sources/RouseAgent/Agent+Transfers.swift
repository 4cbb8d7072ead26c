import Logging
import RouseAgentCore
import RouseSystem
import RouseText
import RouseWire

/// The agent's steps for background transfers: requests from handlers, the book's actions, results handed back (a
/// task being added: `Agent+TransferUploads.swift`; its libcurl job: `Agent+TransferJobs.swift`). The state is in
/// ``Transfers``; each step tells it what happened and performs what it returns.
extension Agent {
    /// The spool: `<transferSpool>/<handler>/<task>.download|upload`, 0700 directories and 0600 files of the agent's.
    var spoolDirectory: String {
        configuration.transferSpool
            ?? PathText.parent(configuration.socketPath) + "/rouse-transfers"
    }

    /// At start: the persisted tasks come back (running ones resume when the network allows), spool files no task
    /// owns are deleted (counted), and sessions that finished while the agent was down wake their handlers.
    func restoreTransfers() {
        transfers.restore(durable.transfers, limits: configuration.transferLimits)
        transfers.removeOrphans(under: spoolDirectory)
        expireTransfers()
        for (handler, session) in transfers.finishedSessions where handlers.contains(handler) {
            perform(transfers: [.sessionFinished(handler: handler, session: session)])
        }
    }

    /// Deletes results older than the configured lifetime that nobody collected (at start and whenever a session
    /// finishes: no timer of its own, the spool budget bounds what waits meanwhile).
    func expireTransfers() {
        let lifetime = configuration.transferResultLifetime
        let cutoff = wallMilliseconds - lifetime.components.seconds * 1000
        perform(transfers: transfers.expire(finishedBefore: cutoff))
    }

    /// The network's usability (the agent's reachability): running transfers wait, waiting ones resume.
    func transfersNetwork(_ usable: Bool) {
        perform(transfers: transfers.network(usable: usable))
    }

    /// Whether the path to the network is expensive: discretionary tasks wait for one that is not.
    func transfersNetwork(expensive: Bool) {
        perform(transfers: transfers.network(expensive: expensive))
    }

    /// The user stopped `name`: its pending tasks are cancelled and their files deleted.
    func transfersUserStopped(_ name: String) {
        perform(transfers: transfers.userStopped(name))
    }

    /// `name` registered: the results of its finished sessions, then `transferSessionDone` for each.
    func transfersRegistered(_ name: String) {
        for session in transfers.owed(name) { deliverFinished(name, session) }
    }

    /// Stops every job (agent shutdown): tasks stay persisted as they are and resume at the next start.
    func stopTransfers() {
        transfers.stopAll()
    }

    /// A transfer request from registered handler `name`; `descriptor` (owned here) came with an `addTransfer`.
    /// False when the request goes on after this step (an upload copied from `descriptor` off the executor; it calls
    /// ``IPCConnection/handled()`` when done).
    func handleTransfer(
        _ name: String, _ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>, descriptor: Int32?
    ) -> Bool {
        if let descriptor {
            if case .addTransfer(let request) = frame.message, request.kind == TransferRecord.Kind.upload.rawValue,
                request.url != nil, request.descriptor == true
            {
                copyUpload(name, connection, frame, request, descriptor: descriptor)
                return false
            }
            closePeerDescriptor(descriptor, from: connection)
        }
        transferRequest(name, connection, frame, copied: nil)
        return true
    }

    /// A transfer request, an upload's body already in the spool (`copied`) when it came as a descriptor. Its reply
    /// is held (``TransferAcks``) while the book has changes not yet saved: one save per run of requests, then the
    /// replies (``flushTransfers()``, from ``transferRunEnded()``).
    func transferRequest(
        _ name: String, _ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>,
        copied: (path: String, size: Int64)?
    ) {
        let requestID = frame.requestID
        transfers.requestBegan()
        defer {
            if transfers.requestEnded() { flushTransfers() }
        }
        func reply(_ message: AgentEvent, after: (() -> Void)? = nil) {
            acknowledge(HeldTransferReply(connection: connection, message: message, requestID: requestID, after: after))
        }
        do throws(TransferRefusal) {
            switch frame.message {
            case .transferSession(let request):
                let session = request.session ?? ""
                try transfers.openSession(handler: name, session: session)
                let tasks = transfers.tasks(of: name, session: session).map { Self.event($0) }
                reply(.transferSessionReply(.init(session: session, tasks: tasks))) {
                    // Results still owed go now (reattaching after a relaunch), files with them.
                    for record in self.transfers.results(of: name, session: session) {
                        self.perform(transfers: [.notify(record)])
                    }
                }
            case .addTransfer(let request):
                let record = try addTransfer(name, request, copied: copied)
                reply(.transferTask(Self.event(record)))
            case .cancelTransfer(let request):
                let actions = try transfers.cancel(handler: name, id: request.taskID ?? -1)
                perform(transfers: actions)
                if case .notify(let record) = actions.first(where: { if case .notify = $0 { true } else { false } }) {
                    reply(.transferTask(Self.event(record)))
                } else {
                    reply(.ok(.init()))
                }
            case .transfersHandled(let request):
                let now = now
                apply(name, handlers.step(name) { $0.transfersHandled(session: request.session ?? "", now: now) })
                reply(.ok(.init()))
            case .register, .reportCall, .callEnded, .complete, .beginTask, .endTask, .setState, .activate, .deactivate,
                .preserve, .restoreReply, .status, .sessions, .rotateKey, .reregister, .userControl, .routeChanged,
                .transfers, .fetchComplete, .protectedFile, .scheduleNotification, .listNotifications,
                .cancelNotifications, .restorationFinished, .unknown:
                return  // not a transfer request: Agent+IPC dispatches these
            case .addVoIPSocket, .removeVoIPSocket, .voipWakeHandled, .setKeepAlive, .clearKeepAlive, .keepAliveDone:
                return  // not a transfer request: Agent+IPC dispatches these
            }
        } catch {
            transfers.count("refused-\(error.code)")
            logger.notice(
                "transfer request refused", metadata: ["handler": "\(name)", "error": "\(error.code)"])
            reply(.error(.init(code: error.code, detail: error.detail)))
        }
    }

    /// Sends `reply` now when nothing is held and nothing is left to save; holds it otherwise (in order after the
    /// replies held before it).
    private func acknowledge(_ reply: HeldTransferReply) {
        guard !transfers.hold(reply) else { return }
        reply.connection.send(reply.message, requestID: reply.requestID)
        reply.after?()
    }

    /// A connection has no more frames ready (or an upload's copy ended): the flush owed, if any.
    func transferRunEnded() {
        if transfers.flushOwed { flushTransfers() }
    }

    /// Saves the tasks when more than their progress changed (one re-sealed state file, counted as `state-saves`),
    /// then sends the replies held for that save: errors (`stateNotSaved`) instead when it failed.
    func flushTransfers() {
        var failure: String?
        if let records = transfers.recordsToSave() {
            do {
                try durable.setTransfers(records)
                transfers.saved(records)
            } catch {
                failure = "\(error)"
                transfers.saveFailed()
                logger.error("transfers not saved", metadata: ["error": "\(error)"])
            }
        }
        for reply in transfers.takeReplies() {
            guard let failure else {
                reply.connection.send(reply.message, requestID: reply.requestID)
                reply.after?()
                continue
            }
            if case .error = reply.message {
                reply.connection.send(reply.message, requestID: reply.requestID)
            } else {
                reply.connection.sendError(
                    "stateNotSaved",
                    "the agent could not save its transfers (\(failure)): the request took effect but would not "
                        + "survive an agent restart", requestID: reply.requestID)
            }
        }
    }
    /// The spool budget account of `handler` (created from its files' sizes).
    @discardableResult
    func account(_ handler: String) -> SpoolAccount { transfers.account(handler) }

    // MARK: Actions

    /// Performs the actions of a step, then saves (a request's step: its flush saves, ``transferRequest``). Replies
    /// held go first: nothing this step sends overtakes them.
    func perform(transfers actions: [TransferAction]) {
        if transfers.flushesBeforeStep { flushTransfers() }
        for action in actions {
            switch action {
            case .start(let record): startJob(record)
            case .stop(let id):
                transfers.stop(id)
            case .notify(let record):
                let wall = wallMilliseconds
                transfers.stamp(record.id, wallMilliseconds: wall)
                notify(record)
            case .sessionFinished(let handler, let session):
                expireTransfers()
                guard handlers.contains(handler) else { continue }
                transfers.owe(handler, session: session)
                let now = now
                apply(handler, handlers.step(handler) { $0.transferEvents(session: session, now: now) })
                if handlers.connection(of: handler) != nil { deliverFinished(handler, session) }
            case .removeSpool(let handler, let path):
                let size = Sys.fileSize(path: path)
                _ = try? Sys.remove(path)
                account(handler).release(size)
            case .log(let text, let metric, let values):
                if let metric { transfers.count(metric) }
                var metadata: Logger.Metadata = [:]
                for (key, value) in values { metadata[key] = "\(value)" }
                logger.notice("\(text)", metadata: metadata)
            }
        }
        if transfers.flushesAfterStep { flushTransfers() }
    }

    /// The session's results still held, then `transferSessionDone` (once).
    private func deliverFinished(_ handler: String, _ session: String) {
        guard let connection = handlers.connection(of: handler) else { return }
        for record in transfers.results(of: handler, session: session) {
            notify(record)
        }
        guard transfers.settle(handler, session: session) else { return }
        let seconds = handlers.configuration(of: handler)?.rules.backgroundDeadline ?? .seconds(30)
        connection.send(.transferSessionDone(.init(session: session, seconds: Double(seconds.components.seconds))))
    }

    /// Sends a task's state to its handler when connected: a result is then handed over (a completed download with
    /// its file's descriptor) and forgotten; progress is not sent to a suspended handler (its socket would fill).
    private func notify(_ record: TransferRecord) {
        guard let connection = handlers.connection(of: record.handler) else { return }
        guard record.state.isTerminal else {
            if handlers.machine(of: record.handler)?.lifecycle != .suspended {
                connection.send(.transferTask(Self.event(record)))
            }
            return
        }
        var sent: Bool
        if record.kind == .download && record.state == .completed {
            do {
                let fd = try AgentError.wrapping(try Sys.openReadOnly(record.spoolFile))
                var event = Self.event(record)
                event.file = true
                sent = connection.send(.transferTask(event), descriptor: fd)
                Sys.close(fd)
            } catch {
                logger.error("spool file lost", metadata: ["task": "\(record.id)", "error": "\(error)"])
                var event = Self.event(record)
                (event.state, event.error, event.detail) = ("failed", "spoolLost", "\(error)")
                sent = connection.send(.transferTask(event))
            }
        } else {
            sent = connection.send(.transferTask(Self.event(record)))
        }
        if sent { perform(transfers: transfers.delivered(record.id)) }
    }

    static func event(_ record: TransferRecord) -> AgentEvent.TransferTask {
        AgentEvent.TransferTask(
            session: record.session, taskID: record.id, kind: record.kind.rawValue, url: record.url,
            state: record.state.rawValue, bytes: record.bytes, total: record.total, status: record.status,
            error: record.error, detail: record.detail)
    }

    /// `rouse agent transfers`: every task, the spool per handler, the rule counters (JSON).
    func transfersJSON() -> String { transfers.json(handlers: handlers.names) }
}
