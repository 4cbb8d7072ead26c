/// The desktop's notification server (`org.freedesktop.Notifications`, on the session bus), as the Desktop
/// Notifications Specification 1.2 defines it.
package struct Notifications: Sendable {
    /// The server's bus name.
    package static let name = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"

    /// How urgent a notification is (the `urgency` hint).
    package enum Urgency: UInt8, Sendable {
        case low = 0
        case normal = 1
        case critical = 2
    }

    /// One notification to show.
    package struct Notification: Sendable, Equatable {
        /// The sending program's name.
        package var appName: String
        /// The id of the shown notification this one replaces (0: a new one).
        package var replacesID: UInt32 = 0
        /// An icon name or `file://` URI.
        package var icon = ""
        /// The summary line.
        package var summary: String
        /// The body (the server may render a subset of HTML).
        package var body: String
        /// Actions as (key, label) pairs; the key `default` is a click on the notification itself.
        package var actions: [(String, String)] = []
        /// `category` hint (`im.received`, `call.incoming` … or the app's own).
        package var category: String?
        /// `urgency` hint.
        package var urgency: Urgency = .normal
        /// `sound-name` hint (a freedesktop sound theme name).
        package var soundName: String?
        /// `desktop-entry` hint: the app's .desktop file name without the suffix.
        package var desktopEntry: String?
        /// Milliseconds before it expires: -1 the server's default, 0 never.
        package var expireTimeout: Int32 = -1

        /// A notification.
        package init(appName: String, summary: String, body: String) {
            self.appName = appName
            self.summary = summary
            self.body = body
        }

        package static func == (lhs: Notification, rhs: Notification) -> Bool {
            lhs.arguments == rhs.arguments
        }

        /// `Notify`'s arguments (`susssasa{sv}i`).
        var arguments: [DBusValue] {
            var hints: [(String, DBusValue)] = [("urgency", .byte(urgency.rawValue))]
            if let category { hints.append(("category", .string(category))) }
            if let soundName { hints.append(("sound-name", .string(soundName))) }
            if let desktopEntry { hints.append(("desktop-entry", .string(desktopEntry))) }
            return [
                .string(appName), .uint32(replacesID), .string(icon), .string(summary), .string(body),
                .array(element: "s", actions.flatMap { [DBusValue.string($0.0), .string($0.1)] }),
                .vardict(hints), .int32(expireTimeout),
            ]
        }
    }

    /// What the server reports of a notification.
    package enum Event: Sendable, Equatable {
        /// `ActionInvoked`: the user chose the action `key` (`default`: clicked it).
        case actionInvoked(id: UInt32, key: String)
        /// `NotificationClosed` with its reason (1 expired, 2 dismissed, 3 closed by a call, 4 other).
        case closed(id: UInt32, reason: UInt32)
    }

    let connection: DBusConnection

    /// The server on `connection` (the session bus, or a test's).
    package init(connection: DBusConnection) { self.connection = connection }

    /// Shows `notification`; returns the id the server gave it.
    package func notify(_ notification: Notification) async throws(DBusError) -> UInt32 {
        let reply = try await connection.call(
            destination: Self.name, path: Self.path, interface: Self.interface, member: "Notify",
            arguments: notification.arguments)
        guard let id = reply.first?.uint32 else { throw DBusError.unexpected("Notify returned \(reply)") }
        return id
    }

    /// Closes the notification `id` (`CloseNotification`).
    package func close(_ id: UInt32) async throws(DBusError) {
        _ = try await connection.call(
            destination: Self.name, path: Self.path, interface: Self.interface, member: "CloseNotification",
            arguments: [.uint32(id)])
    }

    /// Calls `handler` (on the connection's loop) with each `ActionInvoked` and `NotificationClosed`.
    package func watch(_ handler: @escaping @Sendable (Event) -> Void) async throws(DBusError) -> DBusRegistration {
        try await connection.subscribe(DBusMatch(path: Self.path, interface: Self.interface)) { signal in
            switch (signal.member, signal.arguments.first?.uint32, signal.arguments.dropFirst().first) {
            case ("ActionInvoked", let id?, let key?):
                if let key = key.string { handler(.actionInvoked(id: id, key: key)) }
            case ("NotificationClosed", let id?, let reason?):
                if let reason = reason.uint32 { handler(.closed(id: id, reason: reason)) }
            default: break
            }
        }
    }
}
