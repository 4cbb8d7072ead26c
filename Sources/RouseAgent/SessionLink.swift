import RouseAgentCore
import RouseDBus
import RouseState

/// The agent's part in the user's session: the D-Bus connection, logind's lock state as a ``SessionLockMachine``,
/// its grace timer, and the pushes waiting for the first unlock. Owned by the ``Agent`` and touched only on its
/// isolation; its steps are in `Agent+Session.swift`.
final class SessionLink {
    /// The system bus connection (logind), once connected.
    var connection: DBusConnection?
    /// The session followed (its object path), once found.
    var sessionPath: String?
    /// The lock state; nil until the session was read (no session integration: nil for ever).
    var machine: SessionLockMachine?
    /// The grace timer.
    let timer: AgentTimer
    /// Subscriptions to end at shutdown.
    var registrations: [DBusRegistration] = []
    /// Pushes received before the first unlock (per-user mode), delivered in order after it.
    var held: [AgentPush] = []
    /// Pushes left unacknowledged because ``held`` was full.
    private(set) var heldOverflow = 0
    /// The `complete-unless-open` files handlers hold open.
    var openFiles = OpenProtectedFiles()
    /// Lock events seen (status, tests).
    private(set) var lockEvents = 0
    /// UPower's state, once read (nil without UPower).
    var power: UPower.PowerState?
    /// Whether reachability's path to the gateway is expensive (cellular, `--expensive-interface`).
    var pathExpensive = false
    /// What discretionary work sees: the path is expensive, or the device runs on battery (iOS: "plugged in and
    /// on Wi-Fi").
    var expensive: Bool { pathExpensive || power?.onBattery == true }
    /// Below this charge on battery, background fetch waits (``lowPower``).
    static let lowBatteryPercentage = 20.0
    /// What background fetch sees: on battery below ``lowBatteryPercentage`` (iOS's Low Power Mode, offered at
    /// 20 %, turns Background App Refresh off); a battery of unknown charge counts as not low.
    var lowPower: Bool {
        guard let power, power.onBattery, let percentage = power.percentage else { return false }
        return percentage < Self.lowBatteryPercentage
    }

    init(timer: AgentTimer) { self.timer = timer }

    /// Whether pushes must wait: integration on, holding asked, and the session never unlocked yet.
    func mustHold(_ integration: SessionIntegration?) -> Bool {
        guard let integration, integration.holdUntilFirstUnlock else { return false }
        return !(machine?.unlockedOnce ?? false)
    }

    /// Keeps `push` for the first unlock; false when the budget is spent (the push stays unacknowledged).
    func hold(_ push: AgentPush, limit: Int) -> Bool {
        if held.contains(where: { $0.id == push.id }) { return true }  // offered again on a reconnect
        guard held.count < limit else {
            heldOverflow += 1
            return false
        }
        held.append(push)
        return true
    }

    /// Counts a lock event.
    func counted() { lockEvents += 1 }
}
