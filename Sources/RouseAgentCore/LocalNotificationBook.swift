/// One local notification a handler scheduled, as the agent keeps it (in its sealed durable state).
package struct ScheduledNotification: Codable, Sendable, Equatable {
    /// The handler's identifier (unique per handler).
    package var identifier: String
    /// Title, subtitle, body.
    package var title: String
    /// A line under the title.
    package var subtitle: String
    /// The body.
    package var body: String
    /// Sound-theme name.
    package var sound: String?
    /// The thread (the `category` hint).
    package var threadID: String?
    /// `passive`, `active`, `time-sensitive`, `critical`.
    package var interruptionLevel: String
    /// JSON text handed back in the response.
    package var userInfo: String?
    /// When it fires next, UNIX milliseconds.
    package var fireAt: Int64
    /// Repeat interval in milliseconds (nil: fires once).
    package var repeatMilliseconds: Int64?

    /// A notification.
    package init(
        identifier: String, title: String, subtitle: String = "", body: String, sound: String? = nil,
        threadID: String? = nil, interruptionLevel: String = "active", userInfo: String? = nil, fireAt: Int64,
        repeatMilliseconds: Int64? = nil
    ) {
        self.identifier = identifier
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.sound = sound
        self.threadID = threadID
        self.interruptionLevel = interruptionLevel
        self.userInfo = userInfo
        self.fireAt = fireAt
        self.repeatMilliseconds = repeatMilliseconds
    }
}

/// The handlers' pending local notifications (iOS's `UNUserNotificationCenter` pending requests): at most
/// ``maximumPending`` per handler, an identifier scheduled again replacing the earlier one, fired in time order by
/// wall time. A value: the agent's shell keeps it in its durable state and arms one timer for ``nextFireAt``.
package struct LocalNotificationBook: Codable, Sendable, Equatable {
    /// iOS keeps at most 64 pending notifications per app ("the system keeps the soonest-firing 64"); here the 65th
    /// is refused, so that a handler learns it instead of losing one silently.
    package static let maximumPending = 64
    /// The shortest repeat interval (iOS: "the time interval must be at least 60 if repeating").
    package static let minimumRepeatMilliseconds: Int64 = 60_000

    /// Pending notifications by handler, each list by `fireAt` (then identifier).
    package private(set) var pending: [String: [ScheduledNotification]] = [:]

    /// Why a schedule was refused.
    package enum Refusal: Error, Equatable, Sendable {
        /// The handler has ``LocalNotificationBook/maximumPending`` pending already.
        case tooManyPending
        /// A repeat interval under a minute.
        case repeatTooShort
    }

    /// An empty book.
    package init() {}

    /// Every pending notification.
    package var count: Int { pending.values.reduce(0) { $0 + $1.count } }

    /// `handler`'s pending notifications, the next to fire first.
    package func list(_ handler: String) -> [ScheduledNotification] { pending[handler] ?? [] }

    /// Schedules `notification` for `handler`, replacing the pending one with its identifier.
    package mutating func schedule(_ notification: ScheduledNotification, for handler: String) throws(Refusal) {
        if let interval = notification.repeatMilliseconds, interval < Self.minimumRepeatMilliseconds {
            throw .repeatTooShort
        }
        var list = pending[handler] ?? []
        list.removeAll { $0.identifier == notification.identifier }
        guard list.count < Self.maximumPending else { throw .tooManyPending }
        list.append(notification)
        list.sort(by: Self.ordered)
        pending[handler] = list
    }

    /// Cancels `identifiers` of `handler` (nil: all of them); returns how many were pending.
    package mutating func cancel(_ identifiers: [String]?, for handler: String) -> Int {
        let before = pending[handler]?.count ?? 0
        if let identifiers {
            let set = Set(identifiers)
            pending[handler]?.removeAll { set.contains($0.identifier) }
        } else {
            pending[handler] = []
        }
        if pending[handler]?.isEmpty == true { pending[handler] = nil }
        return before - (pending[handler]?.count ?? 0)
    }

    /// When the next notification fires (UNIX milliseconds); nil with none pending.
    package var nextFireAt: Int64? { pending.values.compactMap(\.first?.fireAt).min() }

    /// Takes the notifications due at `wallNow` (UNIX milliseconds), in time order: one-shot ones leave the book,
    /// repeating ones stay with their next time after `wallNow` (the intervals missed while the agent was down fire
    /// once, not once each).
    package mutating func takeDue(wallNow: Int64) -> [(handler: String, notification: ScheduledNotification)] {
        var due: [(handler: String, notification: ScheduledNotification)] = []
        for handler in pending.keys.sorted() {
            guard var list = pending[handler] else { continue }
            var kept: [ScheduledNotification] = []
            for notification in list {
                guard notification.fireAt <= wallNow else {
                    kept.append(notification)
                    continue
                }
                due.append((handler, notification))
                if let interval = notification.repeatMilliseconds, interval > 0 {
                    var next = notification
                    let missed = (wallNow - notification.fireAt) / interval + 1
                    next.fireAt = notification.fireAt + missed * interval
                    kept.append(next)
                }
            }
            list = kept.sorted(by: Self.ordered)
            pending[handler] = list.isEmpty ? nil : list
        }
        return due.sorted { Self.ordered($0.notification, $1.notification) }
    }

    private static func ordered(_ a: ScheduledNotification, _ b: ScheduledNotification) -> Bool {
        a.fireAt != b.fireAt ? a.fireAt < b.fireAt : a.identifier < b.identifier
    }
}
