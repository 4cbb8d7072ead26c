import RouseAgentCore
import Testing

/// The background-transfer rules without sockets, files or clocks (``TransferBook``), and the handler rule a
/// finished session triggers (``HandlerMachine/transferEvents(session:now:)``).
@Suite("TransferBook and the backgroundTransfer handler rule")
struct TransferBookTests {
    static func book(concurrent: Int = 2, tasks: Int = 4) -> TransferBook {
        var limits = TransferBook.Limits()
        limits.concurrent = concurrent
        limits.concurrentPerHandler = concurrent
        limits.tasksPerHandler = tasks
        var book = TransferBook(limits: limits, networkUsable: true)
        #expect(throws: Never.self) { try book.openSession(handler: "h", session: "s") }
        return book
    }

    static func add(_ book: inout TransferBook, _ url: String = "https://example.com/f") throws(TransferRefusal)
        -> (
            Int, [TransferAction]
        )
    {
        try book.add(
            handler: "h", session: "s", kind: .download, url: url, method: "GET", headers: [], discretionary: false,
            spoolFile: { "/spool/h/\($0).download" })
    }

    static func started(_ actions: [TransferAction]) -> [Int] {
        actions.compactMap { if case .start(let record) = $0 { record.id } else { nil } }
    }

    static func finishedSessions(_ actions: [TransferAction]) -> Int {
        actions.filter { if case .sessionFinished = $0 { true } else { false } }.count
    }

    @Test func tasksRunUpToTheConcurrencyLimitAndTheNextStartsWhenOneEnds() throws {
        var book = Self.book(concurrent: 2)
        #expect(Self.started(try Self.add(&book).1) == [1])
        #expect(Self.started(try Self.add(&book).1) == [2])
        #expect(Self.started(try Self.add(&book).1) == [])
        #expect(book.tasks[3]?.state == .queued)
        let ended = book.finished(id: 1, .response(status: 200, bytes: 10, validator: "\"v\""))
        #expect(Self.started(ended) == [3])
        #expect(book.tasks[1]?.state == .completed)
        #expect(Self.finishedSessions(ended) == 0)  // 2 and 3 still run
    }

    /// One handler's slow transfers hold at most its own slots: another handler's task starts at once.
    @Test func oneHandlerHoldsAtMostItsShareOfTheSlots() throws {
        var limits = TransferBook.Limits()
        limits.concurrent = 4
        limits.concurrentPerHandler = 2
        var book = TransferBook(limits: limits, networkUsable: true)
        for handler in ["slow", "other"] { try book.openSession(handler: handler, session: "s") }
        func add(_ handler: String) throws -> [Int] {
            Self.started(
                try book.add(
                    handler: handler, session: "s", kind: .download, url: "https://example.com/f", method: "GET",
                    headers: [], discretionary: false, spoolFile: { "/spool/\(handler)/\($0).download" }
                ).1)
        }
        #expect(try add("slow") == [1])
        #expect(try add("slow") == [2])
        for _ in 0..<10 { #expect(try add("slow") == []) }
        #expect(try add("other") == [13])
        #expect(book.tasks.values.filter { $0.state == .running }.count == 3)
        // When one of the slow handler's transfers ends, its next starts (still two of its own at most).
        #expect(Self.started(book.finished(id: 1, .response(status: 200, bytes: 1, validator: nil))) == [3])
    }

    /// A handler sets headers that describe its request, never those that frame or route it.
    @Test(arguments: [
        ("Authorization: Bearer x", true), ("X-Request-Id: 1", true), ("accept: */*", true),
        ("Host: 169.254.169.254", false), ("Content-Length: 0", false), ("Transfer-Encoding: chunked", false),
        ("Proxy-Authorization: x", false), ("X-Forwarded-For: 10.0.0.1", false), ("Range: bytes=0-", false),
        ("Connection: close", false),
    ])
    func headersAreLimitedToASafeSet(_ header: String, _ allowed: Bool) throws {
        var book = Self.book()
        do {
            _ = try book.add(
                handler: "h", session: "s", kind: .download, url: "https://example.com/f", method: "GET",
                headers: [header], discretionary: false, spoolFile: { "\($0)" })
            #expect(allowed, "\(header) accepted")
        } catch {
            #expect(!allowed && error.code == "forbiddenHeader", "\(header): \(error)")
        }
    }

    @Test func theSessionIsFinishedWhenItsLastTaskEndsOrOneNeedsTheHandler() throws {
        var book = Self.book()
        _ = try Self.add(&book)
        _ = try Self.add(&book)
        #expect(Self.finishedSessions(book.finished(id: 1, .response(status: 200, bytes: 1, validator: nil))) == 0)
        #expect(Self.finishedSessions(book.finished(id: 2, .response(status: 404, bytes: 1, validator: nil))) == 1)
        #expect(book.tasks[2]?.status == 404)  // 4xx complete, as in iOS
        _ = try Self.add(&book)
        _ = try Self.add(&book)
        // An authentication failure needs the handler now, though task 4 still runs.
        #expect(Self.finishedSessions(book.finished(id: 3, .response(status: 401, bytes: 0, validator: nil))) == 1)
    }

    @Test func budgetsAndBadRequestsAreRefusedPrecisely() throws {
        var book = Self.book(tasks: 2)
        _ = try Self.add(&book)
        _ = try Self.add(&book)
        #expect(throws: TransferRefusal.self) { try Self.add(&book) }
        var other = Self.book()
        for (url, code) in [("file:///etc/passwd", "badRequest"), ("https://a b", "badRequest")] {
            do {
                _ = try Self.add(&other, url)
                Issue.record("\(url) accepted")
            } catch {
                #expect(error.code == code)
            }
        }
        do {
            _ = try other.add(
                handler: "h", session: "never-opened", kind: .download, url: "https://example.com", method: "GET",
                headers: [], discretionary: false, spoolFile: { "\($0)" })
            Issue.record("a session never opened accepted")
        } catch {
            #expect(error.code == "unknownSession")
        }
        do {
            try other.openSession(handler: "h", session: "../escape")
            Issue.record("a path as identifier accepted")
        } catch {
            #expect(error.code == "badRequest")
        }
        #expect(book.counters["tooManyTasks"] == 1)
    }

    @Test func aLostNetworkStopsRunningTasksAndItsReturnResumesThem() throws {
        var book = Self.book()
        _ = try Self.add(&book)
        let down = book.network(usable: false)
        #expect(down.contains(.stop(id: 1)))
        #expect(book.tasks[1]?.state == .waitingForNetwork)
        // A failure that arrives meanwhile (the link went away under the transfer) keeps it waiting.
        #expect(book.finished(id: 1, .failure(code: "transport", detail: "", bytes: 5, validator: nil)).isEmpty)
        _ = try Self.add(&book)
        #expect(book.tasks[2]?.state == .queued)
        let up = book.network(usable: true)
        #expect(Self.started(up) == [1, 2])
        #expect(book.tasks[1]?.attempts == 2)
    }

    @Test func discretionaryTasksWaitForANetworkThatIsNotExpensive() throws {
        var book = Self.book(concurrent: 4)
        _ = try book.add(
            handler: "h", session: "s", kind: .download, url: "https://example.com/big", method: "GET", headers: [],
            discretionary: true, spoolFile: { "/spool/h/\($0).download" })
        _ = try Self.add(&book)
        #expect(book.tasks[1]?.state == .running)
        // Cellular: the discretionary task stops and waits; the other keeps running; a new discretionary one queues.
        let expensive = book.network(expensive: true)
        #expect(expensive.contains(.stop(id: 1)))
        #expect(!expensive.contains(.stop(id: 2)))
        #expect(book.tasks[1]?.state == .waitingForNetwork)
        _ = try book.add(
            handler: "h", session: "s", kind: .download, url: "https://example.com/later", method: "GET", headers: [],
            discretionary: true, spoolFile: { "/spool/h/\($0).download" })
        #expect(book.tasks[3]?.state == .queued)
        #expect(Self.started(book.network(expensive: false)) == [1, 3])
    }

    @Test func resultsNobodyCollectsExpire() throws {
        var book = Self.book()
        _ = try Self.add(&book)
        _ = try Self.add(&book)
        _ = book.finished(id: 1, .response(status: 200, bytes: 1, validator: nil))
        book.stamp(id: 1, wallMilliseconds: 1_000)
        book.stamp(id: 2, wallMilliseconds: 1_000)  // still running: not stamped
        book.stamp(id: 1, wallMilliseconds: 9_000)  // stamped once
        #expect(book.tasks[1]?.finishedAt == 1_000)
        #expect(book.tasks[2]?.finishedAt == nil)
        #expect(book.expire(finishedBefore: 1_000).isEmpty)
        let expired = book.expire(finishedBefore: 1_001)
        #expect(expired.first == .removeSpool(handler: "h", path: "/spool/h/1.download"))
        #expect(book.tasks[1] == nil)
        #expect(book.tasks[2]?.state == .running)
    }

    @Test func transientFailuresAreRetriedAFewTimesThenReported() throws {
        var book = Self.book()
        _ = try Self.add(&book)
        for attempt in 1..<TransferBook.maxAttempts {
            #expect(book.tasks[1]?.attempts == attempt)
            let actions = book.finished(id: 1, .failure(code: "unreachable", detail: "", bytes: 0, validator: nil))
            #expect(Self.started(actions) == [1])
        }
        let last = book.finished(id: 1, .failure(code: "unreachable", detail: "refused", bytes: 0, validator: nil))
        #expect(book.tasks[1]?.state == .failed)
        #expect(book.tasks[1]?.error == "unreachable")
        #expect(Self.finishedSessions(last) == 1)
        // A TLS failure is not transient: reported at once.
        _ = try Self.add(&book)
        _ = book.finished(id: 2, .failure(code: "tls", detail: "bad certificate", bytes: 0, validator: nil))
        #expect(book.tasks[2]?.state == .failed)
        // A write error (a full disk): failed at once, and the partial file is deleted before any handler collects
        // the result.
        _ = try Self.add(&book)
        let disk = book.finished(id: 3, .failure(code: "disk", detail: "ENOSPC", bytes: 4096, validator: nil))
        #expect(book.tasks[3]?.state == .failed)
        #expect(book.tasks[3]?.error == "disk")
        #expect(disk.contains(.removeSpool(handler: "h", path: book.tasks[3]?.spoolFile ?? "")))
    }

    @Test func aUserStopCancelsEverythingAndDeliveryForgetsTheTask() throws {
        var book = Self.book()
        _ = try Self.add(&book)
        _ = try Self.add(&book)
        _ = book.finished(id: 2, .response(status: 200, bytes: 3, validator: nil))
        #expect(book.delivered(id: 2) == [.removeSpool(handler: "h", path: "/spool/h/2.download")])
        #expect(book.tasks[2] == nil)
        _ = try Self.add(&book)
        let stop = book.userStopped(handler: "h")
        #expect(stop.contains(.stop(id: 1)))
        #expect(stop.contains(.removeSpool(handler: "h", path: "/spool/h/3.download")))
        #expect(book.tasks.isEmpty)
        #expect(Self.finishedSessions(stop) == 0)  // nothing wakes a handler the user stopped
    }

    @Test func restoredTasksAreQueuedAgainAndFinishedSessionsAreOwed() throws {
        var book = Self.book()
        _ = try Self.add(&book)
        _ = try Self.add(&book)
        _ = try Self.add(&book)
        _ = book.finished(id: 1, .response(status: 200, bytes: 1, validator: nil))
        var restored = TransferBook(restoring: book.records)
        #expect(restored.tasks[2]?.state == .queued)
        #expect(restored.finishedSessions.isEmpty)
        #expect(Self.started(restored.network(usable: true)) == [2, 3])
        // New ids continue after the restored ones.
        #expect(try Self.add(&restored).0 == 4)
        var done = Self.book()
        _ = try Self.add(&done)
        _ = done.finished(id: 1, .response(status: 200, bytes: 1, validator: nil))
        #expect(TransferBook(restoring: done.records).finishedSessions.map(\.session) == ["s"])
    }

    // MARK: HandlerMachine

    static func machine() -> HandlerMachine {
        var rules = HandlerRules()
        rules.backgroundDeadline = .seconds(30)
        rules.launchDeadline = .seconds(10)
        rules.suspendAfter = .seconds(1)
        return HandlerMachine(rules: rules)
    }

    @Test func aFinishedSessionLaunchesTheHandlerWhichOwesItsCompletion() {
        var machine = Self.machine()
        #expect(machine.transferEvents(session: "s", now: .zero) == [.launch(reason: "backgroundTransfer")])
        _ = machine.registered(now: .seconds(1))
        // Not suspended while it owes the answer; handled in time: no kill, then idle (suspended later).
        #expect(machine.tick(now: .seconds(5)).isEmpty)
        #expect(!machine.transfersHandled(session: "s", now: .seconds(6)).isEmpty)
        #expect(machine.tick(now: .seconds(7)) == [.suspend])
    }

    @Test func aHandlerThatNeverAnswersIsKilledAtTheDeadline() {
        var machine = Self.machine()
        _ = machine.transferEvents(session: "s", now: .zero)
        _ = machine.registered(now: .seconds(1))
        #expect(machine.nextDeadline(now: .seconds(1)) == .seconds(40))
        #expect(!machine.tick(now: .seconds(39)).contains(.kill(reason: "transfer events not handled in time")))
        #expect(machine.tick(now: .seconds(40)).contains(.kill(reason: "transfer events not handled in time")))
    }

    @Test func aSuspendedHandlerIsResumedAndAUserStoppedOneIsLeftAlone() {
        var machine = Self.machine()
        _ = machine.userStart(now: .zero)
        _ = machine.registered(now: .zero)
        #expect(machine.tick(now: .seconds(2)) == [.suspend])
        let actions = machine.transferEvents(session: "s", now: .seconds(3))
        #expect(actions.prefix(2) == [.resume, .notify(.lifecycle(.background))])
        var stopped = Self.machine()
        _ = stopped.userStop()
        #expect(stopped.transferEvents(session: "s", now: .zero).isEmpty)
    }
}
