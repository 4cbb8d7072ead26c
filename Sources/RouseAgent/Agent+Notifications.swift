import FoundationEssentials
import Logging
import RouseAgentCore
import RouseDBus
import RouseText
import RouseWire

/// Notifications (docs/agent.md, "Notifications"): alert pushes shown through the desktop's notification server
/// without launching their handler, local notifications handlers schedule, and the user's click launching the
/// handler with the response (iOS `didReceiveNotificationResponse`).
extension Agent {
    /// Connects to the notification server's bus and follows its signals; arms the local notifications' timer.
    /// Without a bus (system mode with no session) alert pushes go to their handler, as before.
    func startNotifications() {
        armNotificationTimer()
        guard let bus = configuration.session?.notificationBus else { return }
        notifications.starting = Task {
            do throws(DBusError) {
                let connection = try await DBusConnection.connect(bus)
                self.notificationsConnected(connection)
                let server = Notifications(connection: connection)
                let registration = try await server.watch { event in Task { await self.notificationEvent(event) } }
                self.notificationsWatching(server, registration)
            } catch {
                self.logger.warning(
                    "notification bus unreachable: alert pushes go to their handlers",
                    metadata: ["error": "\(error)", "bus": "\(bus)"])
            }
        }
    }

    private func notificationsConnected(_ connection: DBusConnection) { notifications.connection = connection }

    private func notificationsWatching(_ server: Notifications, _ registration: DBusRegistration) {
        notifications.server = server
        notifications.registration = registration
        logger.info("notification server followed")
    }

    /// Ends the subscription and the connection.
    func stopNotifications() async {
        notifications.timer.cancel()
        notifications.starting?.cancel()
        await notifications.registration?.cancel()
        notifications.registration = nil
        notifications.server = nil
        await notifications.connection?.close()
        notifications.connection = nil
    }

    // MARK: Alert pushes

    /// Shows alert push `push` for handler `name` and acknowledges it; false when it is not an alert, shows nothing
    /// (no `aps.alert`), or no server could show it: the caller then hands it to the handler, as before.
    ///
    /// At least once: the acknowledgement follows the server's answer and the de-duplication record, so a push whose
    /// `Notify` did not return (the agent died) comes again, and one shown and acknowledged is not shown again
    /// when the gateway offers it twice (the de-duplication window).
    func showsAlert(_ push: AgentPush, handler name: String) async -> Bool {
        guard push.pushType == "alert", configuration.session?.notificationBus != nil else { return false }
        await notifications.starting?.value
        guard let server = notifications.server, let content = AlertContent(payload: push.payload) else {
            return false
        }
        let collapseKey = push.collapseID.map { "push:" + $0 }
        await notifications.beginShowing(collapseKey, of: name)
        defer { notifications.endShowing(collapseKey, of: name) }
        let notification = content.notification(
            appName: name, replacesID: notifications.replacing(collapseKey, of: name))
        let metadata: Logger.Metadata = ["push-id": "\(push.id)", "handler": "\(name)"]
        do throws(DBusError) {
            let id = try await server.notify(notification)
            let response = AgentEvent.NotificationResponse(
                notificationID: push.apnsID, source: "push", action: "default", payload: push.payload,
                topic: push.topic)
            notifications.track(id, .init(handler: name, collapseKey: collapseKey, response: response))
            durable.handled(push)
            link.ack(push.id)
            logger.info(
                "alert shown",
                metadata: metadata.merging(["notification": "\(id)", "replaces": "\(notification.replacesID)"]) { $1 })
            return true
        } catch {
            notifications.fallbacks += 1
            logger.warning(
                "alert not shown: handed to its handler", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            return false
        }
    }

    // MARK: The server's signals

    func notificationEvent(_ event: Notifications.Event) {
        switch event {
        case .actionInvoked(let id, let key):
            guard var entry = notifications.entry(id) else { return }
            entry.response.action = key
            logger.info(
                "notification response",
                metadata: ["handler": "\(entry.handler)", "notification": "\(id)", "action": "\(key)"])
            respond(entry.handler, entry.response)
        case .closed(let id, _):
            notifications.forget(id)
        }
    }

    /// Wakes (or launches) `name` for `response`, handed once it is registered.
    private func respond(_ name: String, _ response: AgentEvent.NotificationResponse) {
        guard handlers.contains(name) else { return }
        notifications.queue(response, for: name)
        let current = now
        apply(name, handlers.step(name) { $0.notificationResponse(now: current) })
        flushNotificationResponses(name)
    }

    /// Hands `name` the responses waiting for it, when it is registered (called at registration too).
    func flushNotificationResponses(_ name: String) {
        guard let connection = handlers.connection(of: name) else { return }
        for response in notifications.takeResponses(name) {
            connection.send(.notificationResponse(response))
        }
    }

    // MARK: Local notifications

    /// Longest title, subtitle or body accepted (UTF-8 bytes), and longest `userInfo`.
    static let notificationTextLimit = 1024
    static let notificationUserInfoLimit = 4096
    /// Furthest a notification may be scheduled (a year).
    static let notificationHorizonMilliseconds: Int64 = 366 * 86_400_000

    func scheduleNotification(
        _ name: String, _ connection: IPCConnection, _ request: LocalNotification, requestID: Int?
    ) {
        let wall = wallMilliseconds
        let scheduled: ScheduledNotification
        switch Self.scheduled(request, wallNow: wall) {
        case .success(let value): scheduled = value
        case .failure(let problem):
            connection.sendError("badRequest", problem.detail, requestID: requestID)
            return
        }
        var book = notifications.book
        do throws(LocalNotificationBook.Refusal) {
            try book.schedule(scheduled, for: name)
        } catch {
            switch error {
            case .tooManyPending:
                connection.sendError(
                    "tooManyPending",
                    "\(name) has \(LocalNotificationBook.maximumPending) pending local notifications, the most a "
                        + "handler may have (as iOS): cancel one first", requestID: requestID)
            case .repeatTooShort:
                connection.sendError("badRequest", "repeatSeconds must be at least 60", requestID: requestID)
            }
            return
        }
        keepBook(book)
        logger.info(
            "local notification scheduled",
            metadata: ["handler": "\(name)", "identifier": "\(scheduled.identifier)", "fire-at": "\(scheduled.fireAt)"])
        connection.send(.notificationsReply(.init(notifications: [Self.wire(scheduled)])), requestID: requestID)
    }

    func listNotifications(_ name: String, _ connection: IPCConnection, requestID: Int?) {
        let list = notifications.book.list(name).map(Self.wire)
        connection.send(.notificationsReply(.init(notifications: list)), requestID: requestID)
    }

    func cancelNotifications(
        _ name: String, _ connection: IPCConnection, _ request: AgentRequest.CancelNotifications, requestID: Int?
    ) {
        guard request.all == true || request.identifiers != nil else {
            connection.sendError(
                "badRequest", "cancelNotifications needs identifiers or all: true", requestID: requestID)
            return
        }
        var book = notifications.book
        let removed = book.cancel(request.all == true ? nil : request.identifiers, for: name)
        keepBook(book)
        connection.send(.ok(.init(detail: "\(removed)")), requestID: requestID)
    }

    private func keepBook(_ book: LocalNotificationBook) {
        notifications.book = book
        durable.setLocalNotifications(book)
        armNotificationTimer()
    }

    /// Arms the timer for the next local notification (none: disarmed).
    func armNotificationTimer() {
        guard let next = notifications.book.nextFireAt else {
            notifications.timer.cancel()
            return
        }
        let wait = Duration.milliseconds(max(0, next - wallMilliseconds))
        notifications.timer.arm(at: time.instant(now + wait)) { await self.notificationTimerFired($0) }
    }

    private func notificationTimerFired(_ generation: UInt64) async {
        guard notifications.timer.fired(generation) else { return }
        var book = notifications.book
        let due = book.takeDue(wallNow: wallMilliseconds)
        keepBook(book)
        for (name, notification) in due { await showLocal(notification, for: name) }
    }

    /// Shows local notification `notification` of `name`; one the server could not show is tried again a minute
    /// later (it stays in the book meanwhile: nothing scheduled is lost to a server that was away).
    private func showLocal(_ notification: ScheduledNotification, for name: String) async {
        await notifications.starting?.value
        let content = AlertContent(
            title: notification.title, subtitle: notification.subtitle, body: notification.body,
            sound: notification.sound, threadID: notification.threadID,
            interruptionLevel: notification.interruptionLevel)
        let collapseKey = "local:" + notification.identifier
        await notifications.beginShowing(collapseKey, of: name)
        defer { notifications.endShowing(collapseKey, of: name) }
        let shown = content.notification(appName: name, replacesID: notifications.replacing(collapseKey, of: name))
        var failure = "no notification server"
        if let server = notifications.server {
            do throws(DBusError) {
                let id = try await server.notify(shown)
                let response = AgentEvent.NotificationResponse(
                    notificationID: notification.identifier, source: "local", action: "default",
                    payload: notification.userInfo)
                notifications.track(id, .init(handler: name, collapseKey: collapseKey, response: response))
                logger.info(
                    "local notification shown",
                    metadata: [
                        "handler": "\(name)", "identifier": "\(notification.identifier)", "notification": "\(id)",
                    ])
                return
            } catch {
                failure = "\(error)"
            }
        }
        logger.warning(
            "local notification not shown: tried again in a minute",
            metadata: ["handler": "\(name)", "identifier": "\(notification.identifier)", "error": "\(failure)"])
        // A repeating one is still in the book (its next time); a one-shot one comes back for the retry.
        guard !notifications.book.list(name).contains(where: { $0.identifier == notification.identifier }) else {
            return
        }
        var retry = notification
        retry.fireAt = wallMilliseconds + 60_000
        retry.repeatMilliseconds = nil
        var book = notifications.book
        if (try? book.schedule(retry, for: name)) != nil { keepBook(book) }
    }

    /// A schedule request's problem.
    struct NotificationProblem: Error {
        let detail: String
    }

    /// Checks `request` and makes the notification to keep (`fireAt` resolved against `wallNow`).
    static func scheduled(_ request: LocalNotification, wallNow: Int64) -> Result<
        ScheduledNotification, NotificationProblem
    > {
        guard let identifier = request.identifier, validProtectedName(identifier) else {
            return .failure(
                .init(
                    detail: "scheduleNotification needs an identifier of 1-64 [A-Za-z0-9._-], not starting with a dot"))
        }
        for (field, text) in [("title", request.title), ("subtitle", request.subtitle), ("body", request.body)] {
            if let text, text.utf8.count > notificationTextLimit {
                return .failure(.init(detail: "\(field) is longer than \(notificationTextLimit) bytes"))
            }
        }
        guard (request.title ?? "").isEmpty == false || (request.body ?? "").isEmpty == false else {
            return .failure(.init(detail: "scheduleNotification needs a title or a body"))
        }
        if let userInfo = request.userInfo {
            guard userInfo.utf8.count <= notificationUserInfoLimit,
                JSONValue(parsing: userInfo) != nil
            else {
                return .failure(
                    .init(detail: "userInfo must be JSON text of at most \(notificationUserInfoLimit) bytes"))
            }
        }
        let level = request.interruptionLevel ?? "active"
        guard ["passive", "active", "time-sensitive", "critical"].contains(level) else {
            return .failure(.init(detail: "interruptionLevel is passive, active, time-sensitive or critical"))
        }
        guard request.fireAt == nil || request.afterSeconds == nil else {
            return .failure(.init(detail: "give fireAt or afterSeconds, not both"))
        }
        var fireAt = request.fireAt ?? wallNow
        if let after = request.afterSeconds {
            guard after.isFinite, after >= 0, after * 1000 <= Double(notificationHorizonMilliseconds) else {
                return .failure(.init(detail: "afterSeconds must be 0 to a year"))
            }
            fireAt = wallNow + Int64(after * 1000)
        }
        guard fireAt - wallNow <= notificationHorizonMilliseconds, fireAt > 0 else {
            return .failure(.init(detail: "fireAt must be a UNIX time in milliseconds within a year"))
        }
        var repeatMilliseconds: Int64?
        if let seconds = request.repeatSeconds {
            guard seconds.isFinite, seconds >= 60, seconds * 1000 <= Double(notificationHorizonMilliseconds) else {
                return .failure(.init(detail: "repeatSeconds must be at least 60 (and at most a year)"))
            }
            repeatMilliseconds = Int64(seconds * 1000)
        }
        return .success(
            ScheduledNotification(
                identifier: identifier, title: request.title ?? "", subtitle: request.subtitle ?? "",
                body: request.body ?? "", sound: request.sound.map { String($0.prefix(128)) },
                threadID: request.threadID.map { String($0.prefix(notificationTextLimit)) }, interruptionLevel: level,
                userInfo: request.userInfo, fireAt: fireAt, repeatMilliseconds: repeatMilliseconds))
    }

    /// The wire form of a kept notification.
    static func wire(_ notification: ScheduledNotification) -> LocalNotification {
        LocalNotification(
            identifier: notification.identifier, title: notification.title,
            subtitle: notification.subtitle.isEmpty ? nil : notification.subtitle, body: notification.body,
            sound: notification.sound, threadID: notification.threadID,
            interruptionLevel: notification.interruptionLevel, userInfo: notification.userInfo,
            fireAt: notification.fireAt, repeatSeconds: notification.repeatMilliseconds.map { Double($0) / 1000 })
    }
}

extension Agent {
    /// Whether the notification server is followed (tests wait for it before pushing).
    package var notificationsFollowed: Bool { notifications.server != nil }

    /// Pending local notifications of every handler (tests, status).
    package var pendingLocalNotifications: Int { notifications.book.count }

    /// Waits for the local notifications' timer when its deadline has passed (tests, after advancing a manual
    /// clock).
    package func settleNotificationTimer() async {
        while let due = notifications.timer.due { await due.value }
    }

    /// The notifications' part of `rouse agent status`.
    var notificationStatus: NotificationStatus? {
        guard configuration.session?.notificationBus != nil || notifications.book.count > 0 else { return nil }
        return NotificationStatus(
            serverFollowed: notifications.server != nil, shown: notifications.shownTotal,
            tracked: notifications.trackedCount, forgottenOverLimit: notifications.forgotten,
            responsesDropped: notifications.responsesDropped, fallbacks: notifications.fallbacks,
            pendingLocal: notifications.book.count)
    }
}

/// The notifications' part of `rouse agent status` (docs/agent.md, "Notifications").
package struct NotificationStatus: Codable, Sendable, Equatable {
    /// Whether the notification server's bus is connected and its signals followed.
    package var serverFollowed: Bool
    /// Notifications shown since the start (alert pushes and local ones).
    package var shown: Int
    /// Shown notifications remembered now (what a click answers).
    package var tracked: Int
    /// Shown notifications forgotten because their handler had 64 remembered (a click on one launches nothing).
    package var forgottenOverLimit: Int
    /// Responses dropped because 16 waited already for their handler to register.
    package var responsesDropped: Int
    /// Alert pushes handed to their handler because the server could not show them.
    package var fallbacks: Int
    /// Pending local notifications, every handler's.
    package var pendingLocal: Int
}
