import RouseAgentCore
import Testing

/// The pending local notifications: the iOS cap, replacement by identifier, time order, repeats.
struct LocalNotificationBookTests {
    static func note(_ id: String, at fireAt: Int64, every: Int64? = nil) -> ScheduledNotification {
        ScheduledNotification(identifier: id, title: id, body: "", fireAt: fireAt, repeatMilliseconds: every)
    }

    @Test func theSixtyFifthIsRefusedButAReplacementIsNot() throws {
        var book = LocalNotificationBook()
        for index in 0..<64 { try book.schedule(Self.note("n\(index)", at: 1000), for: "a") }
        #expect(throws: LocalNotificationBook.Refusal.tooManyPending) {
            try book.schedule(Self.note("x", at: 1), for: "a")
        }
        try book.schedule(Self.note("n3", at: 5), for: "a")
        try book.schedule(Self.note("x", at: 1), for: "b")  // per handler
        #expect(book.count == 65)
        #expect(book.list("a").first?.identifier == "n3")
        #expect(book.nextFireAt == 1)
        #expect(book.cancel(["n3", "nope"], for: "a") == 1)
        #expect(book.cancel(nil, for: "a") == 63)
        #expect(book.list("a").isEmpty)
    }

    @Test func dueOnesLeaveRepeatsStayWithTheirNextTime() throws {
        var book = LocalNotificationBook()
        #expect(throws: LocalNotificationBook.Refusal.repeatTooShort) {
            try book.schedule(Self.note("r", at: 0, every: 59_999), for: "a")
        }
        try book.schedule(Self.note("once", at: 100), for: "a")
        try book.schedule(Self.note("later", at: 10_000), for: "a")
        try book.schedule(Self.note("every", at: 50, every: 60_000), for: "b")
        #expect(book.takeDue(wallNow: 99).map(\.notification.identifier) == ["every"])
        #expect(book.list("b").first?.fireAt == 60_050)
        #expect(book.takeDue(wallNow: 100).map(\.notification.identifier) == ["once"])
        // Down for three intervals: fires once, next time after now.
        let due = book.takeDue(wallNow: 200_000)
        #expect(due.map(\.notification.identifier) == ["later", "every"])
        #expect(book.list("b").first?.fireAt == 240_050)
        #expect(book.list("a").isEmpty)
    }
}
