import RouseAgentCore
import RouseDBus
import RouseWire

/// The agent's part in the desktop's notifications (docs/agent.md, "Notifications"): the session-bus connection to
/// the notification server, the notifications shown for handlers (what a click answers, which id a collapse id
/// replaces), the responses waiting for their handler to register, and the pending local notifications with their
/// timer. Owned by the ``Agent`` and touched only on its isolation; its steps are in `Agent+Notifications.swift`.
final class NotificationLink {
    /// At most this many shown notifications are remembered per handler (what a click or a collapse id needs); the
    /// oldest is forgotten beyond (counted in ``forgotten``): a click on it then launches nothing.
    static let maximumTracked = 64
    /// At most this many responses wait for one handler to register; more are dropped (counted).
    static let maximumWaitingResponses = 16

    /// One notification shown for a handler.
    struct Shown {
        /// The handler.
        var handler: String
        /// `push:<collapse id>` or `local:<identifier>`, when it may be replaced.
        var collapseKey: String?
        /// The response a click sends (its `action` set then).
        var response: AgentEvent.NotificationResponse
    }

    /// The session-bus connection, once connected.
    var connection: DBusConnection?
    /// The notification server on it.
    var server: Notifications?
    /// The signal subscription.
    var registration: DBusRegistration?
    /// The connection under way (alert pushes wait for it rather than fall back to their handler at start).
    var starting: Task<Void, Never>?
    /// The local notifications' timer.
    let timer: AgentTimer
    /// The pending local notifications (saved in the durable state at each change).
    var book: LocalNotificationBook

    private var shown: [UInt32: Shown] = [:]
    /// Shown ids per handler, oldest first.
    private var order: [String: [UInt32]] = [:]
    /// `handler NUL collapseKey` → the id showing it.
    private var collapsed: [String: UInt32] = [:]
    private var responses: [String: [AgentEvent.NotificationResponse]] = [:]
    /// `handler NUL collapseKey` → who waits for the `Notify` under way with that key (see ``beginShowing``).
    private var underWay: [String: [CheckedContinuation<Void, Never>]] = [:]

    /// Notifications shown (alert pushes and local ones).
    private(set) var shownTotal = 0
    /// Shown notifications forgotten because their handler had ``maximumTracked`` remembered.
    private(set) var forgotten = 0
    /// Responses dropped because ``maximumWaitingResponses`` waited already.
    private(set) var responsesDropped = 0
    /// Alert pushes handed to their handler because the server could not show them.
    var fallbacks = 0

    /// Waits until no `Notify` for `collapseKey` of `handler` is under way, then marks one under way until
    /// ``endShowing(_:of:)``: a second notification with the same key (two alert pushes with one collapse id back to
    /// back, a repeating local one due again) takes the first's id from its answer and replaces it, instead of asking
    /// while that answer is still on its way and showing beside it. No key, no waiting.
    func beginShowing(_ collapseKey: String?, of handler: String, isolation: isolated (any Actor)? = #isolation) async {
        guard let collapseKey else { return }
        let key = handler + "\u{0}" + collapseKey
        guard underWay[key] != nil else {
            underWay[key] = []
            return
        }
        await withCheckedContinuation { underWay[key, default: []].append($0) }
    }

    /// The `Notify` for `collapseKey` of `handler` answered (or failed): the next one waiting goes.
    func endShowing(_ collapseKey: String?, of handler: String) {
        guard let collapseKey else { return }
        let key = handler + "\u{0}" + collapseKey
        guard var waiting = underWay[key], !waiting.isEmpty else {
            underWay[key] = nil
            return
        }
        let next = waiting.removeFirst()
        underWay[key] = waiting
        next.resume()
    }

    init(timer: AgentTimer, book: LocalNotificationBook) {
        self.timer = timer
        self.book = book
    }

    /// Notifications remembered now.
    var trackedCount: Int { shown.count }

    /// The id showing `collapseKey` of `handler` (0: none, Notify then makes a new one).
    func replacing(_ collapseKey: String?, of handler: String) -> UInt32 {
        guard let collapseKey else { return 0 }
        return collapsed[handler + "\u{0}" + collapseKey] ?? 0
    }

    /// Remembers `id` as shown (replacing what it showed before, when the server reused the id).
    func track(_ id: UInt32, _ entry: Shown) {
        shownTotal += 1
        forget(id)
        shown[id] = entry
        order[entry.handler, default: []].append(id)
        if let key = entry.collapseKey { collapsed[entry.handler + "\u{0}" + key] = id }
        while let oldest = order[entry.handler]?.first, (order[entry.handler]?.count ?? 0) > Self.maximumTracked {
            forget(oldest)
            forgotten += 1
        }
    }

    /// What `id` showed, if it is one of ours (other programs' notifications share the server's signals).
    func entry(_ id: UInt32) -> Shown? { shown[id] }

    /// Forgets `id` (closed, or beyond the bound).
    func forget(_ id: UInt32) {
        guard let entry = shown.removeValue(forKey: id) else { return }
        order[entry.handler]?.removeAll { $0 == id }
        if order[entry.handler]?.isEmpty == true { order[entry.handler] = nil }
        if let key = entry.collapseKey, collapsed[entry.handler + "\u{0}" + key] == id {
            collapsed[entry.handler + "\u{0}" + key] = nil
        }
    }

    /// Keeps `response` for `handler` until it is registered.
    func queue(_ response: AgentEvent.NotificationResponse, for handler: String) {
        guard (responses[handler]?.count ?? 0) < Self.maximumWaitingResponses else {
            responsesDropped += 1
            return
        }
        responses[handler, default: []].append(response)
    }

    /// The responses waiting for `handler`, taken.
    func takeResponses(_ handler: String) -> [AgentEvent.NotificationResponse] {
        responses.removeValue(forKey: handler) ?? []
    }
}
