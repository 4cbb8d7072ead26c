import RouseAgentCore
import RouseDBus
import RouseWire

/// The agent's UnifiedPush distributor state (docs/unifiedpush.md): the session-bus connection that owns
/// `org.unifiedpush.Distributor.rouse`, the registration book (saved in the durable state at each change), the
/// deliveries waiting for an app's reply, and the counters `rouse-agent status` shows. Owned by the ``Agent`` and
/// touched only on its isolation; its steps are in `Agent+UnifiedPush.swift`.
final class UnifiedPushLink {
    /// The session-bus connection, once the name is owned.
    var connection: DBusConnection?
    /// The exported object.
    var registration: DBusRegistration?
    /// The start under way (messages wait for it rather than go unacknowledged).
    var starting: Task<Void, Never>?
    /// The registrations.
    var book: UnifiedPushBook
    /// Delivery ids sent to an app and not answered yet (a second offer of one is not sent twice).
    var inFlight: Set<String> = []
    /// A pass deleting subscriptions is under way.
    var deleting = false
    /// `Register` calls being worked on.
    var registering = 0
    let limits: UnifiedPushLimits

    /// `Register` calls answered `REGISTRATION_SUCCEEDED`.
    var registered = 0
    /// Calls ignored as malformed.
    var malformed = 0
    /// `Register` calls refused, by reason.
    var refused: [String: Int] = [:]
    /// Messages handed to an app.
    var delivered = 0
    /// Messages acknowledged to the gateway (the app's reply carried the id; version 1: on send).
    var acknowledged = 0
    /// Deliveries that failed (an error, a timeout, a reply without the id): left for the gateway to offer again.
    var failed = 0
    /// Messages for no registration (an app unregistered meanwhile): acknowledged and dropped.
    var orphaned = 0
    /// Registrations removed because their app can no longer be started, or stayed silent.
    var purged = 0
    /// Failed deliveries counted against their app; apps paused at the handler rules' limit.
    var strikes: UnifiedPushStrikes

    init(book: UnifiedPushBook, limits: UnifiedPushLimits) {
        self.book = book
        self.limits = limits
        self.strikes = UnifiedPushStrikes(probeInterval: limits.probeInterval)
    }

    /// The status section.
    var status: UnifiedPushStatus {
        UnifiedPushStatus(
            nameOwned: connection != nil, registrations: book.registrations.count, registered: registered,
            refused: refused, malformed: malformed, delivered: delivered, acknowledged: acknowledged, failed: failed,
            orphaned: orphaned, purged: purged, pendingDeletions: book.pendingDeletions.count, strikes: strikes.total,
            pauses: strikes.pauses, withheld: strikes.withheld, paused: strikes.pausedApps)
    }
}

/// The UnifiedPush distributor's part of `rouse-agent status`.
package struct UnifiedPushStatus: Codable, Sendable, Equatable {
    /// Whether the agent owns `org.unifiedpush.Distributor.rouse`.
    package var nameOwned: Bool
    /// Registrations kept now.
    package var registrations: Int
    /// `Register` calls answered `REGISTRATION_SUCCEEDED` since the start.
    package var registered: Int
    /// `Register` calls refused since the start, by reason (`ACTION_REQUIRED` counts the per-app and per-device caps).
    package var refused: [String: Int]
    /// Calls ignored as malformed.
    package var malformed: Int
    /// Messages handed to apps.
    package var delivered: Int
    /// Messages acknowledged to the gateway.
    package var acknowledged: Int
    /// Deliveries that failed (error, timeout, reply without the id): the gateway offers them again.
    package var failed: Int
    /// Messages for no registration, acknowledged and dropped.
    package var orphaned: Int
    /// Registrations purged (app gone, or silent for 30 days and not answering a ping).
    package var purged: Int
    /// Gateway subscriptions still to delete.
    package var pendingDeletions: Int
    /// Failed deliveries counted as strikes against their app since the start (``UnifiedPushStrikes``).
    package var strikes: Int
    /// Times an app's deliveries were paused at the strike limit.
    package var pauses: Int
    /// Deliveries left unacknowledged at the gateway because their app was paused.
    package var withheld: Int
    /// The apps (D-Bus names) whose deliveries are paused now.
    package var paused: [String]
}

/// The UnifiedPush distributor's budgets (docs/unifiedpush.md).
package struct UnifiedPushLimits: Sendable, Equatable {
    /// Registrations per app at most (then `ACTION_REQUIRED`).
    package var perApp = UnifiedPushBook.defaultMaximumPerApp
    /// Registrations on the device at most (then `ACTION_REQUIRED`).
    package var perDevice = UnifiedPushBook.defaultMaximumPerDevice
    /// How long an app has to answer `Message` (its D-Bus activation included) before the delivery counts as failed:
    /// no acknowledgement, the gateway offers the message again on the next channel.
    package var replyTimeout = Duration.seconds(30)
    /// Deliveries waiting for a reply at most; more messages wait at the gateway (unacknowledged).
    package var maximumInFlight = 64
    /// `Register` calls being worked on (bus checks, the gateway round trip) at most; more are refused with
    /// `INTERNAL_ERROR` (a session client flooding the distributor).
    package var maximumRegistering = 16
    /// While an app's deliveries are paused after strikes, one probe delivery is let through this long after its
    /// last strike (``UnifiedPushStrikes/probeInterval``).
    package var probeInterval = UnifiedPushStrikes.defaultProbeInterval

    /// The defaults.
    package init() {}
}
