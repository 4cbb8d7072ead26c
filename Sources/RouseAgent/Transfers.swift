import FoundationEssentials
import RouseAgentCore
import RouseSystem
import RouseWire

/// Background transfers' state: the rules (``TransferBook``), the libcurl jobs running, the spool accounts, the
/// sessions whose results a handler is owed, the replies held until the book is saved, the rule counters. Owned by
/// the ``Agent`` and touched only on its isolation; the agent's steps in `Agent+Transfers.swift` tell it what
/// happened through the methods here and perform the actions they return. Nothing outside reads its storage.
final class Transfers {
    private struct Job {
        let token: Int
        let task: Task<Void, Never>
    }

    /// The rules and the tasks.
    private var book = TransferBook()
    private var jobs: [Int: Job] = [:]
    private var nextToken = 1
    private var accounts: [String: SpoolAccount] = [:]
    /// Finished sessions by handler: their results and `transferSessionDone` are owed.
    private var owedDone: [String: Set<String>] = [:]
    /// The persisted tasks as last saved, progress left out (saved only when something else changes).
    private var savedShape: [TransferRecord] = []
    /// Rule events by metric name (`rouse agent transfers` shows them).
    private var metrics: [String: Int] = [:]
    /// The replies to transfer requests waiting for the book to be saved.
    private var acks = TransferAcks<HeldTransferReply>()
    /// Set while a handler's transfer request is handled: its changes are saved by the flush after the run of
    /// requests, not by each step.
    private var handlingRequest = false

    /// No transfers yet.
    init() {}

    /// The tasks come back from what was persisted (as saved).
    func restore(_ records: [TransferRecord], limits: TransferBook.Limits) {
        book = TransferBook(restoring: records, limits: limits)
        savedShape = Self.shape(book.records)
    }

    /// Deletes the files under `spool` (`<spool>/<handler>/<file>`) that no task owns, each counted as
    /// `spool-orphans-removed`.
    func removeOrphans(under spool: String) {
        let owned = Set(book.records.map(\.spoolFile))
        for handler in ((try? Sys.directoryEntries(spool)) ?? []) {
            for file in ((try? Sys.directoryEntries(spool + "/" + handler)) ?? []) {
                let path = spool + "/" + handler + "/" + file
                if !owned.contains(path) {
                    _ = try? Sys.remove(path)
                    count("spool-orphans-removed")
                }
            }
        }
    }

    /// Counts a rule event.
    func count(_ metric: String) { metrics[metric, default: 0] += 1 }

    // MARK: The rules' inputs (each returns the actions to perform)

    /// `transferSession`: creates or reattaches `session`.
    func openSession(handler: String, session: String) throws(TransferRefusal) {
        try book.openSession(handler: handler, session: session)
    }

    /// `addTransfer`, checked: the new task (its spool file `<directory>/<id>.<kind>`) and the actions.
    func add(
        handler: String, session: String, kind: TransferRecord.Kind, url: String, method: String, headers: [String],
        discretionary: Bool, directory: String, uploadBytes: Int64?
    ) throws(TransferRefusal) -> (record: TransferRecord, actions: [TransferAction]) {
        let (id, actions) = try book.add(
            handler: handler, session: session, kind: kind, url: url, method: method, headers: headers,
            discretionary: discretionary, spoolFile: { "\(directory)/\($0).\(kind.rawValue)" },
            uploadBytes: uploadBytes)
        guard let record = book.tasks[id] else { throw TransferRefusal(code: "internal", detail: "") }
        return (record, actions)
    }

    /// `cancelTransfer` from `handler`.
    func cancel(handler: String, id: Int) throws(TransferRefusal) -> [TransferAction] {
        try book.cancel(handler: handler, id: id)
    }

    /// The user stopped `handler`: it is owed nothing any more, its pending tasks are cancelled.
    func userStopped(_ handler: String) -> [TransferAction] {
        owedDone[handler] = nil
        return book.userStopped(handler: handler)
    }

    /// The network became usable or not.
    func network(usable: Bool) -> [TransferAction] { book.network(usable: usable) }

    /// The path became expensive or not.
    func network(expensive: Bool) -> [TransferAction] { book.network(expensive: expensive) }

    /// Results finished before `cutoff` (UNIX milliseconds) that nobody collected are forgotten.
    func expire(finishedBefore cutoff: Int64) -> [TransferAction] { book.expire(finishedBefore: cutoff) }

    /// Terminal task `id` finished at `wallMilliseconds` (recorded once).
    func stamp(_ id: Int, wallMilliseconds: Int64) { book.stamp(id: id, wallMilliseconds: wallMilliseconds) }

    /// The result of task `id` reached its handler.
    func delivered(_ id: Int) -> [TransferAction] { book.delivered(id: id) }

    /// The job of task `id` reported progress.
    func progress(_ id: Int, bytes: Int64, total: Int64?, validator: String?) -> [TransferAction] {
        book.progress(id: id, bytes: bytes, total: total, validator: validator)
    }

    /// The transfer of task `id` ended.
    func finished(_ id: Int, _ outcome: TransferBook.Outcome) -> [TransferAction] {
        book.finished(id: id, outcome)
    }

    // MARK: What the book holds

    /// Task `id`, while the book holds it.
    func task(_ id: Int) -> TransferRecord? { book.tasks[id] }

    /// `handler`'s tasks in `session`, oldest first.
    func tasks(of handler: String, session: String) -> [TransferRecord] { book.tasks(of: handler, session: session) }

    /// `handler`'s finished tasks in `session` (results still to hand over), oldest first.
    func results(of handler: String, session: String) -> [TransferRecord] {
        book.tasks(of: handler, session: session).filter(\.state.isTerminal)
    }

    /// Sessions whose tasks are all finished with results still to hand over.
    var finishedSessions: [(handler: String, session: String)] { book.finishedSessions }

    /// Whether discretionary tasks see an expensive network now.
    var networkExpensive: Bool { book.networkExpensive }

    // MARK: Jobs

    /// A fresh token (a job's, or a spool file's name).
    func makeToken() -> Int {
        nextToken += 1
        return nextToken
    }

    /// Task `id` runs as `task`, known by `token`.
    func started(_ id: Int, token: Int, _ task: Task<Void, Never>) { jobs[id] = Job(token: token, task: task) }

    /// Whether task `id` runs as the job `token`.
    func isRunning(_ id: Int, token: Int) -> Bool { jobs[id]?.token == token }

    /// The job of task `id` ended by itself.
    func ended(_ id: Int) { jobs[id] = nil }

    /// Cancels the job of task `id`.
    func stop(_ id: Int) { jobs.removeValue(forKey: id)?.task.cancel() }

    /// Cancels every job (agent shutdown).
    func stopAll() {
        for job in jobs.values { job.task.cancel() }
        jobs = [:]
    }

    // MARK: Spool accounts

    /// `handler`'s spool budget account, created from its tasks' file sizes the first time.
    func account(_ handler: String) -> SpoolAccount {
        if let account = accounts[handler] { return account }
        let used = book.records.filter { $0.handler == handler }
            .reduce(Int64(0)) { $0 + Sys.fileSize(path: $1.spoolFile) }
        let account = SpoolAccount(limit: book.limits.spoolBytesPerHandler, used: used)
        accounts[handler] = account
        return account
    }

    // MARK: Results owed

    /// `handler`'s session finished: its results and `transferSessionDone` are owed.
    func owe(_ handler: String, session: String) { owedDone[handler, default: []].insert(session) }

    /// The sessions `handler` is owed, sorted.
    func owed(_ handler: String) -> [String] { (owedDone[handler] ?? []).sorted() }

    /// `transferSessionDone` for `session` is sent now: true when it was owed (it no longer is).
    func settle(_ handler: String, session: String) -> Bool { owedDone[handler]?.remove(session) != nil }

    // MARK: Replies held until saved

    /// A handler's transfer request begins: its steps' changes wait for the flush after the run of requests.
    func requestBegan() { handlingRequest = true }

    /// The request ended: true when the flush is due now (``TransferAcks/limit`` replies held); otherwise a flush is
    /// owed at the end of the run when anything is held or left to save.
    func requestEnded() -> Bool {
        handlingRequest = false
        if acks.isFull { return true }
        if !acks.isEmpty || recordsToSave() != nil { acks.owe() }
        return false
    }

    /// Holds `reply` when replies are held before it or the book has changes not yet saved; false when it may go now.
    func hold(_ reply: HeldTransferReply) -> Bool {
        guard acks.isEmpty, recordsToSave() == nil else {
            acks.hold(reply)
            return true
        }
        return false
    }

    /// Whether a flush is owed at the end of the run of requests.
    var flushOwed: Bool { acks.owed }

    /// Whether a step outside a request must flush the replies held before it performs anything (nothing it sends
    /// overtakes them).
    var flushesBeforeStep: Bool { !handlingRequest && !acks.isEmpty }

    /// Whether a step saves at its end (outside a request: a request's flush saves).
    var flushesAfterStep: Bool { !handlingRequest }

    /// The replies held, in order, to send after the save (none held afterwards, no flush owed).
    func takeReplies() -> [HeldTransferReply] { acks.take() }

    // MARK: Saving

    /// The tasks to persist when more than their progress changed since the last save (nil: nothing to save).
    func recordsToSave() -> [TransferRecord]? {
        Self.shape(book.records) == savedShape ? nil : book.records
    }

    /// `records` (from ``recordsToSave()``) are saved (counted as `state-saves`).
    func saved(_ records: [TransferRecord]) {
        savedShape = Self.shape(records)
        count("state-saves")
    }

    /// Saving failed (counted as `state-save-failures`).
    func saveFailed() { count("state-save-failures") }

    private static func shape(_ records: [TransferRecord]) -> [TransferRecord] {
        records.map { record in
            var record = record
            record.bytes = 0
            return record
        }
    }

    // MARK: Status

    /// `rouse agent transfers`: every task, the spool of each of `handlers`, the jobs running, the rule counters and
    /// the book's (`book-` prefixed), as JSON.
    func json(handlers: [String]) -> String {
        struct Document: Encodable {
            var tasks: [TransferRecord]
            var spoolBytes: [String: Int64]
            var running: Int
            var metrics: [String: Int]
            var networkUsable: Bool
        }
        var spool: [String: Int64] = [:]
        for name in handlers { spool[name] = account(name).bytes }
        let document = Document(
            tasks: book.records, spoolBytes: spool, running: jobs.count,
            metrics: metrics.merging(book.counters.map { ("book-\($0.key)", $0.value) }) { $1 },
            networkUsable: book.networkUsable)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(document)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// A reply to a handler's transfer request, held until the book is saved (``TransferAcks``).
struct HeldTransferReply {
    let connection: IPCConnection
    let message: AgentEvent
    let requestID: Int?
    /// What follows the reply once sent (a reattached session's results still owed).
    let after: (() -> Void)?
}
