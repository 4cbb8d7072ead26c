import RouseWire

/// Local notifications (docs/agent.md, "Notifications"; iOS's `UNUserNotificationCenter`): the agent shows them
/// through the desktop's notification server at their time, even while the handler is not running, and keeps them
/// across its restarts. A click arrives on ``messages`` as `notificationResponse` (the handler is launched for it).
extension AgentClient {
    /// Schedules `notification` (its identifier replaces a pending one with the same); returns it as scheduled,
    /// `fireAt` resolved. ``AgentRequestError`` `tooManyPending` when 64 are pending already, `badRequest` for a bad
    /// field.
    @discardableResult
    public func scheduleNotification(_ notification: LocalNotification) async throws -> LocalNotification {
        let scheduled = try await expectNotifications(.scheduleNotification(notification))
        guard let first = scheduled.first else {
            throw AgentRequestError(code: "badAnswer", detail: "notificationsReply without the notification")
        }
        return first
    }

    /// The handler's pending local notifications, the next to fire first.
    public func pendingNotifications() async throws -> [LocalNotification] {
        try await expectNotifications(.listNotifications(.init()))
    }

    /// Cancels the pending notifications `identifiers` (nil: all of them); returns how many were pending.
    @discardableResult
    public func cancelNotifications(_ identifiers: [String]?) async throws -> Int {
        let answer = try await request(
            .cancelNotifications(.init(identifiers: identifiers, all: identifiers == nil ? true : nil)))
        guard case .ok(let ok) = answer else {
            throw AgentRequestError(code: "badAnswer", detail: "cancelNotifications answered with \(answer.type)")
        }
        return ok.detail.flatMap { Int($0) } ?? 0
    }

    private func expectNotifications(_ message: AgentRequest) async throws -> [LocalNotification] {
        let answer = try await request(message)
        guard case .notificationsReply(let reply) = answer else {
            throw AgentRequestError(code: "badAnswer", detail: "\(message.type) answered with \(answer.type)")
        }
        return reply.notifications
    }
}
