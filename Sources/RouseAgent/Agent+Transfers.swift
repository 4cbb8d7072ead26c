import FoundationEssentials
import Logging
import RouseAgentCore
import RouseCurl
import RouseSystem
import RouseText
import RouseWire
import Synchronization

/// The agent's steps for background transfers: requests from handlers, libcurl jobs, results handed back. The state
/// is in ``Transfers``.
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
        let owned = Set(transfers.book.records.map(\.spoolFile))
        for handler in ((try? Sys.directoryEntries(spoolDirectory)) ?? []) {
            for file in ((try? Sys.directoryEntries(spoolDirectory + "/" + handler)) ?? []) {
                let path = spoolDirectory + "/" + handler + "/" + file
                if !owned.contains(path) {
                    _ = try? Sys.remove(path)
                    transfers.count("spool-orphans-removed")
                }
            }
        }
        expireTransfers()
        for (handler, session) in transfers.book.finishedSessions where handlers.contains(handler) {
            perform(transfers: [.sessionFinished(handler: handler, session: session)])
        }
    }

    /// Deletes results older than the configured lifetime that nobody collected (at start and whenever a session
    /// finishes: no timer of its own, the spool budget bounds what waits meanwhile).
    func expireTransfers() {
        let lifetime = configuration.transferResultLifetime
        let cutoff = wallMilliseconds - lifetime.components.seconds * 1000
        perform(transfers: transfers.step { $0.expire(finishedBefore: cutoff) })
    }

    /// The network's usability (the agent's reachability): running transfers wait, waiting ones resume.
    func transfersNetwork(_ usable: Bool) {
        perform(transfers: transfers.step { $0.network(usable: usable) })
    }

    /// Whether the path to the network is expensive: discretionary tasks wait for one that is not.
    func transfersNetwork(expensive: Bool) {
        perform(transfers: transfers.step { $0.network(expensive: expensive) })
    }

    /// The user stopped `name`: its pending tasks are cancelled and their files deleted.
    func transfersUserStopped(_ name: String) {
        transfers.forgive(name)
        perform(transfers: transfers.step { $0.userStopped(handler: name) })
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
    private func transferRequest(
        _ name: String, _ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>,
        copied: (path: String, size: Int64)?
    ) {
        let requestID = frame.requestID
        transfers.handlingRequest = true
        defer {
            transfers.handlingRequest = false
            scheduleTransferFlush()
        }
        func reply(_ message: AgentEvent, after: (() -> Void)? = nil) {
            acknowledge(HeldTransferReply(connection: connection, message: message, requestID: requestID, after: after))
        }
        do throws(TransferRefusal) {
            switch frame.message {
            case .transferSession(let request):
                let session = request.session ?? ""
                try transfers.step { (book: inout TransferBook) throws(TransferRefusal) in
                    try book.openSession(handler: name, session: session)
                }
                let tasks = transfers.book.tasks(of: name, session: session).map { Self.event($0) }
                reply(.transferSessionReply(.init(session: session, tasks: tasks))) {
                    // Results still owed go now (reattaching after a relaunch), files with them.
                    for record in self.transfers.book.tasks(of: name, session: session) where record.state.isTerminal {
                        self.perform(transfers: [.notify(record)])
                    }
                }
            case .addTransfer(let request):
                let record = try addTransfer(name, request, copied: copied)
                reply(.transferTask(Self.event(record)))
            case .cancelTransfer(let request):
                let actions = try transfers.step { (book: inout TransferBook) throws(TransferRefusal) in
                    try book.cancel(handler: name, id: request.taskID ?? -1)
                }
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
        guard transfers.acks.isEmpty, transfers.recordsToSave() == nil else {
            transfers.acks.hold(reply)
            return
        }
        reply.connection.send(reply.message, requestID: reply.requestID)
        reply.after?()
    }

    /// After a request: the flush now when ``TransferAcks/limit`` replies are held, else owed at the end of the run
    /// (``transferRunEnded()``: a run of requests is saved once).
    private func scheduleTransferFlush() {
        if transfers.acks.isFull {
            flushTransfers()
        } else if !transfers.acks.isEmpty || transfers.recordsToSave() != nil {
            transfers.acks.owe()
        }
    }

    /// A connection has no more frames ready (or an upload's copy ended): the flush owed, if any.
    func transferRunEnded() {
        if transfers.acks.owed { flushTransfers() }
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
                transfers.count("state-save-failures")
                logger.error("transfers not saved", metadata: ["error": "\(error)"])
            }
        }
        for reply in transfers.acks.take() {
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

    /// An upload's body from the descriptor a handler passed, copied into the spool on the handler's thread of
    /// ``copies`` (a 1 GiB file, or one on a mount that never answers, holds that thread, never the agent nor another
    /// handler's uploads), then added.
    private func copyUpload(
        _ name: String, _ connection: IPCConnection, _ frame: IPCFrame<AgentRequest>,
        _ request: AgentRequest.AddTransfer, descriptor: Int32
    ) {
        let directory = spoolDirectory + "/" + name
        let path = "\(directory)/incoming-\(transfers.makeToken())"
        let account = account(name)
        let limit = min(configuration.transferLimits.uploadBytes, account.limit)
        let (copies, blocking) = (copies.pool(for: name), blocking)
        Task {
            let copied = await copies.run { () -> Result<Int64, TransferRefusal> in
                defer { blocking.closeNow(descriptor) }
                copies.countCopy()
                return Self.copy(descriptor, to: path, directory: directory, account: account, limit: limit)
            }
            switch copied {
            case .success(let size) where handlers.connection(of: name) === connection:
                transferRequest(name, connection, frame, copied: (path, size))
                transferRunEnded()  // not part of a run of the connection's frames
            case .success(let size):
                _ = try? Sys.remove(path)  // the handler went away meanwhile: nobody to answer
                account.release(size)
            case .failure(let error):
                transfers.count("refused-\(error.code)")
                logger.notice(
                    "transfer request refused", metadata: ["handler": "\(name)", "error": "\(error.code)"])
                connection.sendError(error.code, error.detail, requestID: frame.requestID)
            }
            connection.handled()
        }
    }

    /// Copies `descriptor` (a regular file of at most `limit` bytes that fits `account`) to `path` (on a blocking
    /// thread): its size.
    private static func copy(
        _ descriptor: Int32, to path: String, directory: String, account: SpoolAccount, limit: Int64
    ) -> Result<Int64, TransferRefusal> {
        guard let status = Sys.fileSize(descriptor), status.regular else {
            return .failure(TransferRefusal(code: "badDescriptor", detail: "the descriptor is not a regular file"))
        }
        let size = status.size
        guard size <= limit else {
            return .failure(
                TransferRefusal(code: "tooLarge", detail: "\(size) bytes are more than an upload may be (\(limit))"))
        }
        guard account.reserve(size) else {
            return .failure(
                TransferRefusal(
                    code: "spoolFull", detail: "\(size) bytes do not fit the handler's spool budget of \(account.limit)"
                ))
        }
        do throws(AgentError) {
            try AgentError.wrapping(try Sys.makeDirectories(directory))
            let fd = try AgentError.wrapping(try Sys.openSpool(path))
            defer { Sys.close(fd) }
            try AgentError.wrapping(try Sys.truncate(fd, to: 0))
            try AgentError.wrapping(try Sys.copy(from: descriptor, to: fd, count: size))
        } catch {
            _ = try? Sys.remove(path)
            account.release(size)
            return .failure(TransferRefusal(code: "spoolFull", detail: "copying the upload: \(error.detail)"))
        }
        return .success(size)
    }

    private func addTransfer(_ name: String, _ request: AgentRequest.AddTransfer, copied: (path: String, size: Int64)?)
        throws(TransferRefusal) -> TransferRecord
    {
        var incoming = copied
        func dropCopy() {
            guard let incoming else { return }
            _ = try? Sys.remove(incoming.path)
            account(name).release(incoming.size)
        }
        guard let kind = request.kind.flatMap(TransferRecord.Kind.init(rawValue:)), let url = request.url else {
            dropCopy()
            throw TransferRefusal(code: "badRequest", detail: "addTransfer needs kind download|upload and url")
        }
        if handlers.configuration(of: name)?.allowPrivateDestinations != true, CurlDestination.isInternal(url: url) {
            dropCopy()
            throw TransferRefusal(
                code: "forbiddenDestination",
                detail: "\(url) is an internal address (allow-private-destinations is not set for this handler)")
        }
        let directory = spoolDirectory + "/" + name
        do {
            try AgentError.wrapping(try Sys.makeDirectories(directory))
        } catch {
            dropCopy()
            throw TransferRefusal(code: "spoolFull", detail: "spool directory: \(error.detail)")
        }
        if kind == .upload, incoming == nil {
            incoming = try spoolBody(name, request, directory: directory)
        } else if kind == .download && (request.descriptor == true || request.body != nil) {
            throw TransferRefusal(code: "badRequest", detail: "a download takes no body and no descriptor")
        }
        do throws(TransferRefusal) {
            let method = kind == .download ? "GET" : (request.method ?? "PUT")
            let (id, actions) = try transfers.step { (book: inout TransferBook) throws(TransferRefusal) in
                try book.add(
                    handler: name, session: request.session ?? "", kind: kind, url: url, method: method,
                    headers: request.headers ?? [], discretionary: request.discretionary ?? false,
                    spoolFile: { "\(directory)/\($0).\(kind.rawValue)" }, uploadBytes: incoming?.size)
            }
            guard let record = transfers.book.tasks[id] else { throw TransferRefusal(code: "internal", detail: "") }
            if let incoming { _ = try? Sys.rename(incoming.path, record.spoolFile) }
            perform(transfers: actions)
            return transfers.book.tasks[id] ?? record
        } catch {
            dropCopy()
            throw error
        }
    }

    /// An upload's body (`body`, base64: at most a frame) into the spool: the agent's own copy, so the upload
    /// survives the handler and an agent restart.
    private func spoolBody(_ name: String, _ request: AgentRequest.AddTransfer, directory: String)
        throws(TransferRefusal) -> (path: String, size: Int64)
    {
        if request.descriptor == true {
            throw TransferRefusal(code: "badDescriptor", detail: "no descriptor came with the frame (SCM_RIGHTS)")
        }
        guard let body = request.body else {
            throw TransferRefusal(code: "badRequest", detail: "an upload needs descriptor: true or body")
        }
        guard let decoded = Data(base64Encoded: body) else {
            throw TransferRefusal(code: "badRequest", detail: "body is not base64")
        }
        let bytes = Array(decoded)
        let size = Int64(bytes.count)
        guard account(name).reserve(size) else {
            throw TransferRefusal(
                code: "spoolFull",
                detail: "\(size) bytes do not fit the handler's spool budget of \(account(name).limit)")
        }
        let path = "\(directory)/incoming-\(transfers.makeToken())"
        do throws(AgentError) {
            let fd = try AgentError.wrapping(try Sys.openSpool(path))
            defer { Sys.close(fd) }
            try AgentError.wrapping(try Sys.truncate(fd, to: 0))
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 16)
            defer { buffer.deallocate() }
            buffer.copyBytes(from: bytes)
            try AgentError.wrapping(
                try Sys.writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[..<bytes.count]), at: 0))
        } catch {
            _ = try? Sys.remove(path)
            account(name).release(size)
            throw TransferRefusal(code: "spoolFull", detail: "copying the upload: \(error.detail)")
        }
        return (path, size)
    }

    /// The spool budget account of `handler` (created from its files' sizes).
    @discardableResult
    func account(_ handler: String) -> SpoolAccount {
        transfers.account(handler) {
            transfers.book.records.filter { $0.handler == handler }
                .reduce(Int64(0)) { $0 + Sys.fileSize(path: $1.spoolFile) }
        }
    }

    // MARK: Actions

    /// Performs the actions of a step, then saves (a request's step: its flush saves, ``transferRequest``). Replies
    /// held go first: nothing this step sends overtakes them.
    func perform(transfers actions: [TransferAction]) {
        if !transfers.handlingRequest, !transfers.acks.isEmpty { flushTransfers() }
        for action in actions {
            switch action {
            case .start(let record): startJob(record)
            case .stop(let id):
                transfers.stop(id)
            case .notify(let record):
                let wall = wallMilliseconds
                transfers.step { $0.stamp(id: record.id, wallMilliseconds: wall) }
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
        if !transfers.handlingRequest { flushTransfers() }
    }

    /// The session's results still held, then `transferSessionDone` (once).
    private func deliverFinished(_ handler: String, _ session: String) {
        guard let connection = handlers.connection(of: handler) else { return }
        for record in transfers.book.tasks(of: handler, session: session) where record.state.isTerminal {
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
        if sent { perform(transfers: transfers.step { $0.delivered(id: record.id) }) }
    }

    private func startJob(_ record: TransferRecord) {
        let id = record.id
        let download = record.kind == .download
        let fd: Int32
        do {
            try AgentError.wrapping(try Sys.makeDirectories(PathText.parent(record.spoolFile)))
            fd = try AgentError.wrapping(try Sys.openSpool(record.spoolFile))
        } catch {
            perform(
                transfers: transfers.step {
                    $0.finished(id: id, .failure(code: "spoolFull", detail: "\(error)", bytes: 0, validator: nil))
                })
            return
        }
        let resume = download ? (Sys.fileSize(fd)?.size ?? 0) : 0
        var headers: [(name: String, value: String)] = record.headers.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingBlanks())
        }
        if download && resume > 0 {
            headers.append(("Range", "bytes=\(resume)-"))
            if let validator = record.validator { headers.append(("If-Range", validator)) }
        }
        let token = transfers.makeToken()
        let sink = SpoolSink(
            fd: fd, upload: !download, resumeFrom: resume, account: account(record.handler),
            onProgress: { bytes, total, validator in
                Task {
                    await self.transferProgress(id, token: token, bytes: bytes, total: total, validator: validator)
                }
            })
        var request = CurlRequest(
            method: record.method, url: record.url, headers: headers, connectTimeout: .seconds(30),
            timeout: .seconds(24 * 3600), tls: CurlTLSOptions(caFile: configuration.transferCAFile),
            maxResponseBodyBytes: 0)
        let limits = configuration.transferLimits
        request.lowSpeed = CurlLowSpeed(
            bytesPerSecond: limits.lowSpeedBytesPerSecond, duration: .seconds(limits.lowSpeedSeconds))
        request.maxRedirects = 5  // as URLSession follows them; a redirect's body is replaced by the final one's
        // Every address libcurl connects to (redirects included) is checked: a root socket reaches no internal service.
        request.publicDestinationsOnly = handlers.configuration(of: record.handler)?.allowPrivateDestinations != true
        if !download { request.upload = CurlUpload(size: Sys.fileSize(fd)?.size ?? 0) }
        let curl = curl
        let task = Task {
            let outcome: TransferBook.Outcome?
            do {
                let response = try await curl.send(request, sink: sink)
                let bytes = sink.state.withLock { $0.bytes }
                outcome = .response(status: response.status, bytes: bytes, validator: sink.validator)
            } catch is CancellationError {
                outcome = nil
            } catch {
                outcome = Self.failure(error, sink: sink)
            }
            sink.close()
            self.transferEnded(id, token: token, outcome)
        }
        transfers.started(id, token: token, task)
    }

    private func transferProgress(_ id: Int, token: Int, bytes: Int64, total: Int64?, validator: String?) {
        guard transfers.isRunning(id, token: token) else { return }
        perform(transfers: transfers.step { $0.progress(id: id, bytes: bytes, total: total, validator: validator) })
    }

    private func transferEnded(_ id: Int, token: Int, _ outcome: TransferBook.Outcome?) {
        guard transfers.isRunning(id, token: token) else { return }
        transfers.ended(id)
        guard let outcome else { return }
        perform(transfers: transfers.step { $0.finished(id: id, outcome) })
    }

    private static func failure(_ error: any Error, sink: SpoolSink) -> TransferBook.Outcome {
        let (bytes, validator, spoolFull, writeError) = sink.state.withLock {
            ($0.bytes, $0.validator, $0.spoolFull, $0.writeError)
        }
        if spoolFull {
            return .failure(
                code: "spoolFull", detail: "the handler's spool budget is spent", bytes: bytes, validator: validator)
        }
        if let writeError { return .failure(code: "disk", detail: writeError, bytes: bytes, validator: validator) }
        let curlError = error as? CurlError
        let code: String
        switch curlError?.code {
        case .couldntResolveHost?, .couldntConnect?, .couldntResolveProxy?: code = "unreachable"
        case .operationTimedOut?: code = "timeout"
        case .sslConnectError?, .peerFailedVerification?, .sslCACertBadFile?, .sslCertProblem?, .sslCipher?:
            code = "tls"
        default: code = "transport"
        }
        return .failure(code: code, detail: "\(error)", bytes: bytes, validator: validator)
    }

    static func event(_ record: TransferRecord) -> AgentEvent.TransferTask {
        AgentEvent.TransferTask(
            session: record.session, taskID: record.id, kind: record.kind.rawValue, url: record.url,
            state: record.state.rawValue, bytes: record.bytes, total: record.total, status: record.status,
            error: record.error, detail: record.detail)
    }

    /// `rouse agent transfers`: every task, the spool per handler, the rule counters (JSON).
    func transfersJSON() -> String {
        struct Document: Encodable {
            var tasks: [TransferRecord]
            var spoolBytes: [String: Int64]
            var running: Int
            var metrics: [String: Int]
            var networkUsable: Bool
        }
        var spool: [String: Int64] = [:]
        for name in handlers.names { spool[name] = account(name).bytes }
        let document = Document(
            tasks: transfers.book.records, spoolBytes: spool, running: transfers.running,
            metrics: transfers.metrics.merging(transfers.book.counters.map { ("book-\($0.key)", $0.value) }) { $1 },
            networkUsable: transfers.book.networkUsable)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(document)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension SpoolSink {
    /// The validator of the last response head.
    var validator: String? { state.withLock { $0.validator } }
}
