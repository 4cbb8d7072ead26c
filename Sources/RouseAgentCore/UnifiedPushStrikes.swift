/// Strikes for UnifiedPush apps (docs/unifiedpush.md, "Strikes"): a delivery that fails (the app's `Message` reply is
/// a D-Bus error, never comes within the reply timeout, or lacks the id) is a strike against the app (its D-Bus name),
/// under the handler rules' numbers (``HandlerRules/strikeLimit`` strikes within ``HandlerRules/strikeWindow``, as
/// `HandlerMachine` counts missed VoIP reports). At the limit the app's deliveries pause: its messages stay
/// unacknowledged at the gateway (nothing acknowledged is lost) instead of waking a broken app again and again. The
/// pause ends when the app registers again (every app start does: `HandlerMachine.reregister()`'s rule) or
/// acknowledges a probe: while paused, one delivery at a time is let through once ``probeInterval`` has passed since
/// the last strike. An acknowledgement clears the app's strikes (the strikes that count are consecutive failures).
///
/// A plain value on machine time (`Duration` since the agent's start, the clock the handler machines use).
package struct UnifiedPushStrikes: Sendable, Equatable {
    /// What ``admit(service:now:)`` decides for a delivery.
    package enum Admission: Sendable, Equatable {
        /// Deliver.
        case deliver
        /// Deliver as the paused app's probe (its reply ends the pause or strikes again).
        case probe
        /// Paused: leave the message unacknowledged at the gateway.
        case paused
    }

    /// One app's record.
    package struct App: Sendable, Equatable {
        /// Times of the strikes inside the window, oldest first.
        package var strikes: [Duration] = []
        /// Deliveries are paused (the limit was reached).
        package var paused = false
        /// A probe delivery is out (at most one while paused).
        package var probing = false
    }

    /// Strikes within ``window`` that pause the app's deliveries (the handler rules' VoIP strike limit).
    package var limit: Int
    /// The window strikes count in (the handler rules' strike window).
    package var window: Duration
    /// While paused, a probe is let through this long after the last strike.
    package var probeInterval: Duration
    /// The apps with strikes or a pause, by D-Bus name.
    package private(set) var apps: [String: App] = [:]
    /// Strikes counted since the start (the `strikes` counter of `rouse-agent status`).
    package private(set) var total = 0
    /// Deliveries left at the gateway because their app was paused.
    package private(set) var withheld = 0
    /// Times an app's deliveries were paused.
    package private(set) var pauses = 0

    /// The probe interval's default: 10 minutes.
    package static let defaultProbeInterval = Duration.seconds(600)

    /// Strikes under `rules`' limit and window.
    package init(rules: HandlerRules = HandlerRules(), probeInterval: Duration = Self.defaultProbeInterval) {
        limit = rules.strikeLimit
        window = rules.strikeWindow
        self.probeInterval = probeInterval
    }

    /// The apps whose deliveries are paused now, sorted.
    package var pausedApps: [String] { apps.filter(\.value.paused).map(\.key).sorted() }

    /// The strikes of `service` inside the window at `now`.
    package func strikeCount(_ service: String, now: Duration) -> Int {
        apps[service]?.strikes.count { now - $0 <= window } ?? 0
    }

    /// Whether a message for `service` may be delivered at `now` (a probe is recorded as out).
    package mutating func admit(service: String, now: Duration) -> Admission {
        guard var app = apps[service], app.paused else { return .deliver }
        let last = app.strikes.last ?? now
        guard !app.probing, now - last >= probeInterval else {
            withheld += 1
            return .paused
        }
        app.probing = true
        apps[service] = app
        return .probe
    }

    /// A delivery to `service` failed at `now`: a strike; true when it paused the app.
    @discardableResult
    package mutating func failed(service: String, now: Duration) -> Bool {
        var app = apps[service] ?? App()
        app.strikes.removeAll { now - $0 > window }
        app.strikes.append(now)
        app.probing = false
        total += 1
        let pausing = !app.paused && app.strikes.count >= limit
        if pausing {
            app.paused = true
            pauses += 1
        }
        apps[service] = app
        return pausing
    }

    /// `service` acknowledged a delivery: its strikes are cleared and a pause ends; true when it was paused.
    @discardableResult
    package mutating func acknowledged(service: String) -> Bool {
        apps.removeValue(forKey: service)?.paused ?? false
    }

    /// `service` registered again (or was unregistered): as ``acknowledged(service:)``.
    @discardableResult
    package mutating func registered(service: String) -> Bool { acknowledged(service: service) }
}
