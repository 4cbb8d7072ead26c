/// One background-transfer task as the agent keeps it (persisted with the agent's sealed state, so that a restarted
/// agent resumes it).
package struct TransferRecord: Codable, Sendable, Equatable {
    /// Download into the spool, or upload from it.
    package enum Kind: String, Codable, Sendable { case download, upload }
    /// Where the task is.
    package enum State: String, Codable, Sendable {
        case queued, running, waitingForNetwork, completed, failed, cancelled
        /// Nothing more happens to it but handing its result over.
        package var isTerminal: Bool { self == .completed || self == .failed || self == .cancelled }
    }

    /// Unique among the agent's tasks.
    package var id: Int
    /// The handler that added it.
    package var handler: String
    /// Its session.
    package var session: String
    package var kind: Kind
    package var url: String
    /// `GET` for downloads; `PUT`/`POST`… for uploads.
    package var method: String
    /// `Name: value` lines.
    package var headers: [String]
    /// May wait for a non-expensive network.
    package var discretionary: Bool
    package var state: State = .queued
    /// Bytes received (download, in the spool file) or sent (upload) so far.
    package var bytes: Int64 = 0
    /// Expected total when known.
    package var total: Int64?
    /// Final HTTP status.
    package var status: Int?
    /// Failure code and words.
    package var error: String?
    package var detail: String?
    /// The spool file: the download's target, or the upload's body (a copy the agent owns).
    package var spoolFile: String
    /// The download's `ETag` (or `Last-Modified`) for `If-Range` when it resumes.
    package var validator: String?
    /// Times it was (re)started.
    package var attempts = 0
    /// When it finished (UNIX milliseconds), for the expiry of results never collected.
    package var finishedAt: Int64?
}

/// Why a transfer request was refused: its code goes to the handler in an `error` frame.
package struct TransferRefusal: Error, Sendable, Equatable {
    /// `badRequest`, `unknownSession`, `unknownTask`, `tooManyTasks`, `spoolFull`, `badDescriptor`.
    package let code: String
    package let detail: String

    /// A refusal with its code and a sentence for the handler.
    package init(code: String, detail: String) {
        self.code = code
        self.detail = detail
    }
}

/// What the shell must do for the transfers, in order.
package enum TransferAction: Sendable, Equatable {
    /// Start (or resume) the task on libcurl.
    case start(TransferRecord)
    /// Stop the task's libcurl transfer (its state was already changed).
    case stop(id: Int)
    /// Tell the handler the task's state (a terminal one is its result; a completed download carries its file).
    case notify(TransferRecord)
    /// Every task of the session is finished, or one needs the handler: wake it (launch reason
    /// `backgroundTransfer`), hand the results over, then `transferSessionDone`.
    case sessionFinished(handler: String, session: String)
    /// Delete a spool file of `handler`'s (its bytes leave the handler's spool budget).
    case removeSpool(handler: String, path: String)
    /// A rule event (constant message, values in metadata); `metric` names the counter it increments.
    case log(String, metric: String?, [String: String])
}

/// The background-transfer rules as a value-type state machine (no sockets, no files, no clock): sessions per
/// handler, the task queue under the budgets, the network's state, which task starts or stops, and when a
/// session is finished. The shell (`Agent+Transfers.swift`) runs libcurl and the spool and feeds results back.
package struct TransferBook: Sendable, Equatable {
    /// Budgets (hostile handlers): see docs/agent.md, "Background transfers".
    package struct Limits: Sendable, Equatable {
        /// Unfinished or undelivered tasks one handler may have.
        package var tasksPerHandler = 64
        /// Transfers running at once, all handlers together.
        package var concurrent = 4
        /// Bytes of spool one handler may hold (downloads and upload copies).
        package var spoolBytesPerHandler: Int64 = 1 << 30
        /// Sessions one handler may have.
        package var sessionsPerHandler = 16
        /// Largest upload a handler may pass as a descriptor (also within its spool budget).
        package var uploadBytes: Int64 = 256 << 20
        /// Transfers of one handler running at once: the others wait, so one handler cannot hold every slot.
        package var concurrentPerHandler = 2
        /// A running transfer slower than this many bytes per second for ``lowSpeedSeconds`` is ended (`timeout`;
        /// it resumes later like any transient failure, within its attempts): a peer that trickles cannot hold a
        /// slot for a day.
        package var lowSpeedBytesPerSecond = 1024
        package var lowSpeedSeconds = 60
        package init() {}
    }

    package var limits: Limits
    /// Starts of one task after transient failures (no response) while the network is up; a link that goes down
    /// does not count (the task waits for it instead).
    package static let maxAttempts = 3
    /// Every task not yet handed back, by id.
    package private(set) var tasks: [Int: TransferRecord] = [:]
    /// Sessions by handler.
    package private(set) var sessions: [String: Set<String>] = [:]
    /// Whether the network is usable (the agent's reachability).
    package private(set) var networkUsable: Bool
    /// Whether the path is expensive (cellular, or an interface configured so): discretionary tasks wait.
    package private(set) var networkExpensive = false
    private var nextID = 1
    /// Counters of refusals and failures by code (metrics).
    package private(set) var counters: [String: Int] = [:]

    /// An empty book.
    package init(limits: Limits = Limits(), networkUsable: Bool = false) {
        self.limits = limits
        self.networkUsable = networkUsable
    }

    /// A book restored from persisted tasks: running ones are queued again (resumed when the network allows).
    package init(restoring records: [TransferRecord], limits: Limits = Limits()) {
        self.init(limits: limits)
        for var record in records {
            if record.state == .running || record.state == .waitingForNetwork { record.state = .queued }
            tasks[record.id] = record
            sessions[record.handler, default: []].insert(record.session)
            nextID = max(nextID, record.id + 1)
        }
    }

    /// Every task, oldest first (to persist).
    package var records: [TransferRecord] { tasks.keys.sorted().compactMap { tasks[$0] } }

    /// A handler's tasks in `session`, oldest first.
    package func tasks(of handler: String, session: String) -> [TransferRecord] {
        records.filter { $0.handler == handler && $0.session == session }
    }

    /// Sessions whose tasks are all finished with results still to hand over (after a restart: owed wake-ups).
    package var finishedSessions: [(handler: String, session: String)] {
        var seen: Set<String> = []
        var result: [(String, String)] = []
        for record in records where !seen.contains(record.handler + "\u{0}" + record.session) {
            seen.insert(record.handler + "\u{0}" + record.session)
            if tasks(of: record.handler, session: record.session).allSatisfy(\.state.isTerminal) {
                result.append((record.handler, record.session))
            }
        }
        return result
    }

    // MARK: Inputs

    /// `transferSession`: creates or reattaches `session`.
    package mutating func openSession(handler: String, session: String) throws(TransferRefusal) {
        guard Self.validIdentifier(session) else {
            throw refuse("badRequest", "a session identifier is 1-64 bytes of A-Za-z0-9._-")
        }
        if sessions[handler]?.contains(session) == true { return }
        guard (sessions[handler]?.count ?? 0) < limits.sessionsPerHandler else {
            throw refuse("tooManySessions", "at most \(limits.sessionsPerHandler) sessions per handler")
        }
        sessions[handler, default: []].insert(session)
    }

    /// `addTransfer`, checked: returns the new task's id; the task is queued (and maybe started).
    package mutating func add(
        handler: String, session: String, kind: TransferRecord.Kind, url: String, method: String, headers: [String],
        discretionary: Bool, spoolFile: (Int) -> String, uploadBytes: Int64? = nil
    ) throws(TransferRefusal) -> (id: Int, actions: [TransferAction]) {
        guard sessions[handler]?.contains(session) == true else {
            throw refuse("unknownSession", "no session \(session) of this handler: send transferSession first")
        }
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://"), url.utf8.count <= 4096,
            !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
        else { throw refuse("badRequest", "url must be http(s), at most 4096 bytes, without spaces or controls") }
        guard headers.count <= 32, headers.allSatisfy(Self.validHeader) else {
            throw refuse("badRequest", "at most 32 headers, each `Name: value` without controls")
        }
        if let header = headers.first(where: { !Self.allowedHeader($0) }) {
            let name = header.prefix { $0 != ":" }
            throw refuse(
                "forbiddenHeader",
                "\(name) is not a header a handler may set (\(Self.allowedHeaderNames.sorted().joined(separator: ", ")), X-…)"
            )
        }
        guard method.utf8.count <= 16, !method.isEmpty, method.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            throw refuse("badRequest", "method must be 1-16 upper-case letters")
        }
        let owned = tasks.values.filter { $0.handler == handler }.count
        guard owned < limits.tasksPerHandler else {
            throw refuse("tooManyTasks", "at most \(limits.tasksPerHandler) tasks per handler")
        }
        let id = nextID
        nextID += 1
        var record = TransferRecord(
            id: id, handler: handler, session: session, kind: kind, url: url, method: method, headers: headers,
            discretionary: discretionary, spoolFile: spoolFile(id))
        record.total = uploadBytes
        tasks[id] = record
        return (id, schedule())
    }

    /// The shell's progress report for a running task; `validator`: the answer's `ETag` (or `Last-Modified`), kept
    /// (and persisted) for the `If-Range` of a resume.
    package mutating func progress(id: Int, bytes: Int64, total: Int64?, validator: String? = nil) -> [TransferAction] {
        guard var record = tasks[id], record.state == .running else { return [] }
        record.bytes = bytes
        if let total { record.total = total }
        if let validator { record.validator = validator }
        tasks[id] = record
        return [.notify(record)]
    }

    /// How a libcurl transfer ended.
    package enum Outcome: Sendable, Equatable {
        /// A response (any status: 4xx/5xx complete the task, as in iOS); `bytes` of body in total.
        case response(status: Int, bytes: Int64, validator: String?)
        /// No response: `code` (`unreachable`, `tls`, `timeout`, `spoolFull`, `transport`…) and words.
        case failure(code: String, detail: String, bytes: Int64, validator: String?)
    }

    /// A running task's transfer ended.
    package mutating func finished(id: Int, _ outcome: Outcome) -> [TransferAction] {
        guard var record = tasks[id], record.state == .running else { return [] }
        var actions: [TransferAction] = []
        switch outcome {
        case .response(let status, let bytes, let validator):
            record.state = .completed
            record.status = status
            record.bytes = bytes
            if record.kind == .download { record.total = bytes }
            record.validator = validator ?? record.validator
        case .failure(let code, let detail, let bytes, let validator):
            record.bytes = bytes
            record.validator = validator ?? record.validator
            let transient = code == "unreachable" || code == "timeout" || code == "transport"
            if transient && (!networkUsable || record.attempts < Self.maxAttempts) {
                // The link went away under it: it waits and resumes (a `Range` request) when the network is back.
                record.state = .waitingForNetwork
                tasks[id] = record
                return [.notify(record)] + schedule()
            }
            record.state = .failed
            record.error = code
            record.detail = detail
            counters[code, default: 0] += 1
            // No file is handed over for a failure: what was spooled goes now, not when the handler collects the
            // result (a full disk is freed while the handler sleeps).
            actions.append(.removeSpool(handler: record.handler, path: record.spoolFile))
            actions.append(.log("transfer failed", metric: "transfers-failed", ["task": "\(id)", "error": code]))
        }
        tasks[id] = record
        actions.append(.notify(record))
        actions += sessionCheck(record)
        return actions + schedule()
    }

    /// `cancelTransfer` from its handler.
    package mutating func cancel(handler: String, id: Int) throws(TransferRefusal) -> [TransferAction] {
        guard let record = tasks[id], record.handler == handler else {
            throw refuse("unknownTask", "no task \(id) of this handler")
        }
        guard !record.state.isTerminal else { return [.notify(record)] }
        return end(id, as: "cancelled", detail: "cancelled by the handler")
    }

    /// The user stopped the handler (`rouse agent stop`): its pending tasks are cancelled, as iOS cancels a
    /// force-quit app's background session tasks; their spool files go.
    package mutating func userStopped(handler: String) -> [TransferAction] {
        var actions: [TransferAction] = []
        for id in tasks.keys.sorted() where tasks[id]?.handler == handler {
            guard let record = tasks[id] else { continue }
            if !record.state.isTerminal && record.state == .running { actions.append(.stop(id: id)) }
            actions.append(.removeSpool(handler: handler, path: record.spoolFile))
            tasks[id] = nil
        }
        sessions[handler] = nil
        if !actions.isEmpty {
            actions.append(.log("transfers cancelled: handler stopped by the user", metric: nil, ["handler": handler]))
        }
        return actions + schedule()
    }

    /// The path became expensive or not (iOS's `isDiscretionary`): on an expensive one, running discretionary
    /// tasks stop and wait (resumed with `Range` later) and queued ones stay queued.
    package mutating func network(expensive: Bool) -> [TransferAction] {
        guard expensive != networkExpensive else { return [] }
        networkExpensive = expensive
        guard expensive else { return schedule() }
        var actions: [TransferAction] = []
        for id in tasks.keys.sorted() where tasks[id]?.state == .running && tasks[id]?.discretionary == true {
            tasks[id]?.state = .waitingForNetwork
            actions.append(.stop(id: id))
            if let record = tasks[id] { actions.append(.notify(record)) }
        }
        return actions + schedule()
    }

    /// The network became usable or not: running tasks wait, waiting ones resume.
    package mutating func network(usable: Bool) -> [TransferAction] {
        guard usable != networkUsable else { return [] }
        networkUsable = usable
        guard !usable else { return schedule() }
        var actions: [TransferAction] = []
        for id in tasks.keys.sorted() where tasks[id]?.state == .running {
            tasks[id]?.state = .waitingForNetwork
            actions.append(.stop(id: id))
            if let record = tasks[id] { actions.append(.notify(record)) }
        }
        return actions
    }

    /// Records when terminal task `id` finished (the shell's wall clock), once.
    package mutating func stamp(id: Int, wallMilliseconds: Int64) {
        guard let record = tasks[id], record.state.isTerminal, record.finishedAt == nil else { return }
        tasks[id]?.finishedAt = wallMilliseconds
    }

    /// Results finished before `cutoff` (UNIX milliseconds) that no handler collected: forgotten, their files
    /// deleted, each counted (`spool-expired`).
    package mutating func expire(finishedBefore cutoff: Int64) -> [TransferAction] {
        var actions: [TransferAction] = []
        for id in tasks.keys.sorted() {
            guard let record = tasks[id], record.state.isTerminal, let at = record.finishedAt, at < cutoff else {
                continue
            }
            tasks[id] = nil
            actions.append(.removeSpool(handler: record.handler, path: record.spoolFile))
            actions.append(
                .log("uncollected transfer result expired", metric: "spool-expired", ["task": "\(id)"]))
        }
        return actions
    }

    /// The result of a terminal task reached its handler (a download's file with it): the task is forgotten.
    package mutating func delivered(id: Int) -> [TransferAction] {
        guard let record = tasks[id], record.state.isTerminal else { return [] }
        tasks[id] = nil
        return [.removeSpool(handler: record.handler, path: record.spoolFile)]
    }

    // MARK: Rules

    private mutating func end(_ id: Int, as code: String, detail: String) -> [TransferAction] {
        guard var record = tasks[id] else { return [] }
        let wasRunning = record.state == .running
        record.state = code == "cancelled" ? .cancelled : .failed
        record.error = code
        record.detail = detail
        tasks[id] = record
        var actions: [TransferAction] = wasRunning ? [.stop(id: id)] : []
        actions.append(.notify(record))
        actions += sessionCheck(record)
        return actions + schedule()
    }

    /// A task of the session turned terminal: the session is finished when all are, or at once when this one
    /// needs the handler (an authentication failure: 401 or 407).
    private func sessionCheck(_ record: TransferRecord) -> [TransferAction] {
        let needsHandler = record.status == 401 || record.status == 407
        let all = tasks(of: record.handler, session: record.session).allSatisfy(\.state.isTerminal)
        guard all || needsHandler else { return [] }
        return [.sessionFinished(handler: record.handler, session: record.session)]
    }

    /// Starts queued (and network-waiting) tasks, oldest first, up to ``Limits/concurrent`` running and
    /// ``Limits/concurrentPerHandler`` of any one handler (a handler's slow transfers leave slots to the others).
    private mutating func schedule() -> [TransferAction] {
        guard networkUsable else { return [] }
        var running = 0
        var runningOf: [String: Int] = [:]
        for record in tasks.values where record.state == .running {
            running += 1
            runningOf[record.handler, default: 0] += 1
        }
        var actions: [TransferAction] = []
        for id in tasks.keys.sorted() where running < limits.concurrent {
            guard var record = tasks[id], record.state == .queued || record.state == .waitingForNetwork,
                !(record.discretionary && networkExpensive),
                runningOf[record.handler, default: 0] < limits.concurrentPerHandler
            else { continue }
            record.state = .running
            record.attempts += 1
            tasks[id] = record
            running += 1
            runningOf[record.handler, default: 0] += 1
            actions.append(.start(record))
            actions.append(.notify(record))
        }
        return actions
    }

    private mutating func refuse(_ code: String, _ detail: String) -> TransferRefusal {
        counters[code, default: 0] += 1
        return TransferRefusal(code: code, detail: detail)
    }

    static func validIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == 0x2E || byte == 0x5F || byte == 0x2D
            } && text != "." && text != ".."
    }

    /// Headers a handler may set on its transfers, besides `X-…` ones: what describes the request and its
    /// credentials, never what frames or routes it (Host, Content-Length, Transfer-Encoding, Connection, Proxy-…,
    /// Range, Forwarded…: libcurl and the agent set those).
    static let allowedHeaderNames: Set<String> = [
        "accept", "accept-language", "authorization", "cache-control", "content-type", "if-match",
        "if-modified-since", "if-none-match", "if-unmodified-since", "user-agent",
    ]

    static func allowedHeader(_ line: String) -> Bool {
        let name = line.prefix { $0 != ":" }.lowercased()
        if name.hasPrefix("x-") { return !name.hasPrefix("x-forwarded-") && name != "x-real-ip" }
        return allowedHeaderNames.contains(name)
    }

    static func validHeader(_ line: String) -> Bool {
        guard line.utf8.count <= 1024, let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
            return false
        }
        let name = line[..<colon]
        return !name.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F || $0 == 0x3B })
            && !line.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F })
    }
}
