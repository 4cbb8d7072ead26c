import RouseDBus

/// The agent in the user's session (docs/agent.md, "Session integration"): which buses logind and the notification
/// server are on, which session to follow, and the lock grace.
package struct SessionIntegration: Sendable {
    /// The bus of logind (and UPower): the system bus, or a test's.
    package var systemBus: DBusBus = .system
    /// The user's uid whose session is followed; nil in system mode (seat0's session).
    package var uid: UInt32?
    /// The session to prefer (`XDG_SESSION_ID` of the session's environment), when it is one of the user's.
    package var sessionID: String?
    /// How long handlers have, after `protectedDataWillBecomeUnavailable`, before the `complete` key goes (iOS
    /// gives about 10 s; the issue asks for files unreadable within 1 s of the lock).
    package var lockGrace = Duration.milliseconds(500)
    /// Per-user mode: no handler is launched before the session's first unlock (pushes wait, VoIP ones too).
    package var holdUntilFirstUnlock = true
    /// At most this many pushes wait for the first unlock; more are left unacknowledged, for the gateway to offer
    /// again on the next connection.
    package var maximumHeldPushes = 256
    /// The notification server's bus (docs/agent.md, "Notifications"): the session bus in per-user mode, a configured
    /// one in system mode; nil: alert pushes go to their handler, no local notification is shown.
    package var notificationBus: DBusBus?
    /// The UnifiedPush distributor's bus (docs/unifiedpush.md): the session bus in per-user mode; nil: no
    /// distributor, and the device channel does not read WebPush.
    package var unifiedPushBus: DBusBus?
    /// The distributor's caps and reply timeout.
    package var unifiedPushLimits = UnifiedPushLimits()

    /// Session integration on `systemBus`, following `uid`'s session.
    package init(systemBus: DBusBus = .system, uid: UInt32?) {
        self.systemBus = systemBus
        self.uid = uid
    }
}
