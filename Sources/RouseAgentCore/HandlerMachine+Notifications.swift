import RouseClock

/// Notifications in a handler's rules (docs/agent.md, "Notifications"): the user's response to one of its
/// notifications wakes it, as iOS launches an app for `didReceiveNotificationResponse`.
extension HandlerMachine {
    /// The user clicked a notification of the handler (or chose an action): launched (reason
    /// `notificationResponse`) or resumed into the background, with the usual idle time before it is suspended
    /// again. A user action: a handler the user stopped is launched too. The shell hands the response once the
    /// handler is registered (at once when it is).
    package mutating func notificationResponse(now: Duration) -> [HandlerAction] {
        switch lifecycle {
        case .notRunning:
            lifecycle = .launching
            return [.launch(reason: "notificationResponse")]
        case .launching:
            return []
        case .suspended:
            enterBackground(now: now)
            return [.resume, .notify(.lifecycle(.background))] + flushCoalesced()
        case .background:
            markIdle(now: now)
            return []
        case .active, .inactive:
            return []
        }
    }
}
