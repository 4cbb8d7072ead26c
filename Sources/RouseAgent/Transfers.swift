import FoundationEssentials
import RouseAgentCore
import RouseWire

/// Background transfers' state: the rules (``TransferBook``), the libcurl jobs running, the spool accounts, the
/// sessions whose results a handler is owed, the rule counters. Owned by the ``Agent`` and touched only on its
/// isolation; the agent's steps in `Agent+Transfers.swift` change the book through ``step(_:)`` and perform the
/// actions it returns.
final class Transfers {
    private struct Job {
        let token: Int
        let task: Task<Void, Never>
    }

    /// The rules and the tasks.
    private(set) var book = TransferBook()
    private var jobs: [Int: Job] = [:]
    private var nextToken = 1
    private var accounts: [String: SpoolAccount] = [:]
    /// Finished sessions by handler: their results and `transferSessionDone` are owed.
    private var owedDone: [String: Set<String>] = [:]
    /// The persisted tasks as last saved, progress left out (saved only when something else changes).
    private var savedShape: [TransferRecord] = []
    /// Rule events by metric name (`rouse agent transfers` shows them).
    private(set) var metrics: [String: Int] = [:]
    /// The replies to transfer requests waiting for the book to be saved.
    var acks = TransferAcks<HeldTransferReply>()
    /// Set while a handler's transfer request is handled: its changes are saved by the flush after the run of
    /// requests, not by each step.
    var handlingRequest = false

    /// No transfers yet.
    init() {}

    /// The tasks come back from what was persisted (as saved).
    func restore(_ records: [TransferRecord], limits: TransferBook.Limits) {
        book = TransferBook(restoring: records, limits: limits)
        savedShape = Self.shape(book.records)
    }

    /// One step of the rules.
    func step<Result>(_ body: (inout TransferBook) throws(TransferRefusal) -> Result) throws(TransferRefusal) -> Result
    {
        try body(&book)
    }

    /// One step of the rules that cannot be refused.
    func step<Result>(_ body: (inout TransferBook) -> Result) -> Result { body(&book) }

    /// Counts a rule event.
    func count(_ metric: String) { metrics[metric, default: 0] += 1 }

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

    /// Jobs running.
    var running: Int { jobs.count }

    // MARK: Spool accounts

    /// `handler`'s spool budget account, created with `used` bytes the first time.
    func account(_ handler: String, used: () -> Int64) -> SpoolAccount {
        if let account = accounts[handler] { return account }
        let account = SpoolAccount(limit: book.limits.spoolBytesPerHandler, used: used())
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

    /// `handler` is owed nothing any more (the user stopped it).
    func forgive(_ handler: String) { owedDone[handler] = nil }

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

    private static func shape(_ records: [TransferRecord]) -> [TransferRecord] {
        records.map { record in
            var record = record
            record.bytes = 0
            return record
        }
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
