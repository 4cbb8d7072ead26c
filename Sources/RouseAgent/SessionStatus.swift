import RouseAgentCore
import RouseDBus

/// The session's part of `rouse agent status`: the lock as followed from logind, the power as read from UPower.
package struct SessionStatus: Codable, Sendable, Equatable {
    /// `unlocked`, `closing` (locked, within the grace), `locked`; nil until logind answered.
    package var lock: String?
    /// Whether the session was unlocked since the agent started.
    package var unlockedOnce: Bool
    /// Pushes waiting for the first unlock.
    package var heldPushes: Int
    /// UPower's `OnBattery`; nil without UPower.
    package var onBattery: Bool?
    /// The display device's charge (0–100); nil without a battery.
    package var batteryPercentage: Double?
    /// Whether discretionary work counts the device as expensive now: the path (reachability) or the battery.
    package var expensive: Bool
    /// Whether background fetch waits for power: on battery below 20 % (iOS's Low Power Mode).
    package var lowPower: Bool
    /// `complete-unless-open` files handlers hold open.
    package var openProtectedFiles: Int
    /// Opens refused because a handler held 16 files (the budget's metric).
    package var openProtectedFilesRefused: Int
}

extension Agent {
    /// The session's status; nil without session integration.
    var sessionStatus: SessionStatus? {
        guard configuration.session != nil else { return nil }
        let lock: String? =
            switch session.machine?.phase {
            case .unlocked: "unlocked"
            case .closing: "closing"
            case .locked: "locked"
            case nil: nil
            }
        return SessionStatus(
            lock: lock, unlockedOnce: session.machine?.unlockedOnce ?? false, heldPushes: session.held.count,
            onBattery: session.power?.onBattery, batteryPercentage: session.power?.percentage,
            expensive: session.expensive, lowPower: session.lowPower, openProtectedFiles: session.openFiles.count,
            openProtectedFilesRefused: session.openFiles.refused)
    }
}
