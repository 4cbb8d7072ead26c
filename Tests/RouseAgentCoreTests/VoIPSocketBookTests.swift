import RouseAgentCore
import Testing

/// Watched VoIP sockets' bookkeeping without sockets.
@Suite("VoIPSocketBook: budgets, coalesced changes, wakes")
struct VoIPSocketBookTests {
    @Test func budgetsPerHandlerAndInTotalAreCounted() {
        var limits = VoIPSocketBook.Limits()
        limits.perHandler = 2
        limits.total = 3
        var book = VoIPSocketBook(limits: limits)
        let answers = [
            book.add("a", kind: .stream), book.add("a", kind: .datagram), book.add("a", kind: .stream),
            book.add("b", kind: .stream), book.add("b", kind: .stream),
        ]
        #expect(answers == [.success(1), .success(2), .failure(.handlerFull), .success(1), .failure(.agentFull)])
        #expect(book.counters.refusedTooMany == 2)
        #expect(book.total == 3)
        let removed = [book.remove("a", 1), book.remove("a", 1)]
        #expect(removed == [true, false])
        let again = book.add("b", kind: .stream)
        #expect(again == .success(2))
    }

    @Test func changesAreCoalescedOnePerKindAndTakenOnce() {
        var book = VoIPSocketBook()
        for _ in 0..<4 { _ = book.add("a", kind: .stream) }
        _ = book.add("a", kind: .datagram)
        book.closed("a", 1)
        book.closed("a", 3)
        book.failed("a", 2, error: "Connection reset by peer (errno 104)", keep: false)
        book.failed("a", 5, error: "Connection refused (errno 111)", keep: true)
        book.failed("a", 5, error: "Connection refused (errno 111)", keep: true)
        let changes = book.takeChanges("a")
        #expect(changes.map(\.kind) == [.closed, .error])
        #expect(changes.first?.sockets.map(\.socketID) == [1, 3])
        #expect(changes.last?.sockets.map(\.socketID) == [2, 5])
        let second = book.takeChanges("a")
        #expect(second.isEmpty)
        // Closed and failed stream sockets are no longer watched; the datagram one is.
        #expect(book.sockets(of: "a").map(\.id) == [4, 5])
        #expect(book.counters.closed == 2 && book.counters.errors == 3)
    }

    @Test func onlyASleepingHandlersSocketsAreWatched() {
        #expect(VoIPSocketBook.watches(.suspended))
        #expect(VoIPSocketBook.watches(.notRunning))
        for running in [HandlerLifecycle.launching, .background, .active, .inactive] {
            #expect(!VoIPSocketBook.watches(running))
        }
    }

    @Test func aDroppedWakeDropsTheSockets() {
        var book = VoIPSocketBook()
        _ = book.add("a", kind: .stream)
        let wake = book.wake()
        let dropped = book.wakeDropped("a")
        #expect(wake == "wake-1")
        #expect(dropped == [1])
        #expect(book.total == 0)
        #expect(book.counters.wakes == 1 && book.counters.wakesDropped == 1)
    }
}
