// The payloads of the notification messages (issue 27): alert pushes the agent shows through the desktop's
// notification server, local notifications a handler schedules, and the user's response to either (iOS's
// `UNUserNotificationCenter` and `didReceiveNotificationResponse`). docs/handler-protocol.md, "Notifications".

extension AgentEvent {
    /// `notificationResponse`: the user clicked a notification of this handler, or chose one of its actions (iOS
    /// `userNotificationCenter(_:didReceive:withCompletionHandler:)`). The handler was launched (reason
    /// `notificationResponse`) or woken for it.
    public struct NotificationResponse: Sendable, Equatable, Codable {
        /// The notification's identifier: the push's `apns-id` for a push, the handler's identifier for a local one.
        public var notificationID: String
        /// `push` or `local`.
        public var source: String
        /// `default` (a click on the notification) or the key of the chosen action.
        public var action: String
        /// A push's payload (base64, as in `push`); a local notification's `userInfo` (its JSON text).
        public var payload: String?
        /// A push's topic.
        public var topic: String?

        /// A response.
        public init(notificationID: String, source: String, action: String, payload: String?, topic: String? = nil) {
            self.notificationID = notificationID
            self.source = source
            self.action = action
            self.payload = payload
            self.topic = topic
        }
    }

    /// `notificationsReply`: the handler's pending local notifications (answer to `listNotifications`, and to
    /// `scheduleNotification` with the one scheduled).
    public struct NotificationsReply: Sendable, Equatable, Codable {
        /// The pending notifications, the next to fire first.
        public var notifications: [LocalNotification]

        /// A reply.
        public init(notifications: [LocalNotification]) { self.notifications = notifications }
    }
}

/// A local notification as a handler schedules it (`scheduleNotification`: its members beside `type`; answered with
/// `notificationsReply` carrying it as scheduled, `fireAt` set, or `error`: `badRequest`, `tooManyPending` for a 65th)
/// and as `listNotifications` reports it.
public struct LocalNotification: Sendable, Equatable, Codable {
    /// The handler's identifier: 1–64 bytes of `A-Za-z0-9._-`. Scheduling an identifier again replaces it (iOS).
    public var identifier: String?
    /// The title (summary line).
    public var title: String?
    /// A line under the title (shown before the body: the freedesktop protocol has no subtitle).
    public var subtitle: String?
    /// The body.
    public var body: String?
    /// A freedesktop sound-theme name (`sound-name` hint).
    public var sound: String?
    /// Groups notifications (the `category` hint), as `aps.thread-id`.
    public var threadID: String?
    /// `passive`, `active` (default), `time-sensitive` or `critical` (the `urgency` hint).
    public var interruptionLevel: String?
    /// JSON text handed back in the response (at most 4 KiB).
    public var userInfo: String?
    /// When to fire, UNIX milliseconds; absent with no `afterSeconds`: now.
    public var fireAt: Int64?
    /// Fire this many seconds from now (instead of `fireAt`).
    public var afterSeconds: Double?
    /// Fire again every this many seconds (at least 60, as iOS's repeating interval trigger).
    public var repeatSeconds: Double?

    /// A notification.
    public init(
        identifier: String?, title: String? = nil, subtitle: String? = nil, body: String? = nil, sound: String? = nil,
        threadID: String? = nil, interruptionLevel: String? = nil, userInfo: String? = nil, fireAt: Int64? = nil,
        afterSeconds: Double? = nil, repeatSeconds: Double? = nil
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
        self.afterSeconds = afterSeconds
        self.repeatSeconds = repeatSeconds
    }
}

extension AgentRequest {
    /// `listNotifications`: the handler's pending local notifications; answered with `notificationsReply`.
    public struct ListNotifications: Sendable, Equatable, Codable {
        /// A request.
        public init() {}
    }

    /// `cancelNotifications`: removes pending local notifications; answered with `ok` (`detail`: how many).
    public struct CancelNotifications: Sendable, Equatable, Codable {
        /// The identifiers to cancel (unknown ones are ignored, as iOS does).
        public var identifiers: [String]?
        /// `true`: cancel every pending notification of the handler.
        public var all: Bool?

        /// A request.
        public init(identifiers: [String]? = nil, all: Bool? = nil) {
            self.identifiers = identifiers
            self.all = all
        }
    }
}
