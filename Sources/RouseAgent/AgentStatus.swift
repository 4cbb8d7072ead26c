import Foundation

/// The status document (`rouse agent status --json`).
public struct AgentStatus: Codable, Sendable {
    /// One handler's state.
    public struct Handler: Codable, Sendable {
        public var name: String
        public var topic: String
        public var state: String
        public var pid: Int32?
        public var connected: Bool
        public var strikes: Int
        public var voipBlocked: Bool
        public var userStopped: Bool
        public var owedReports: [String]
        public var openBackgroundPushes: [String]
        public var tasks: [String]
        public var budgetRemainingSeconds: Double?
        public var backgroundTokens: Double
        public var heldPush: String?
    }

    public var channel: String
    public var gatewayReachable: Bool
    public var deviceID: String?
    public var suspendMechanism: String
    public var suspendNote: String
    public var handlers: [Handler]
}

extension Agent {
    /// The status now.
    public func status() -> AgentStatus {
        let current = now
        let handlers = slots.keys.sorted().map { name -> AgentStatus.Handler in
            let slot = slots[name]!
            let machine = slot.machine
            return AgentStatus.Handler(
                name: name, topic: slot.configuration.topic, state: machine.lifecycle.rawValue,
                pid: slot.process?.pid ?? slot.connection?.peer?.pid, connected: slot.connection != nil,
                strikes: machine.strikeCount, voipBlocked: machine.voipBlocked, userStopped: machine.userStopped,
                owedReports: machine.owedReports.keys.sorted(),
                openBackgroundPushes: machine.openBackground.keys.sorted(),
                tasks: machine.tasks.values.sorted(), budgetRemainingSeconds: machine.budgetRemaining(now: current),
                backgroundTokens: (machine.availableTokens(now: current) * 100).rounded() / 100,
                heldPush: machine.held?.id)
        }
        return AgentStatus(
            channel: channelState.rawValue, gatewayReachable: gatewayReachable, deviceID: state.deviceID,
            suspendMechanism: control.mechanism.rawValue, suspendNote: control.note, handlers: handlers)
    }

    func statusJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(status())).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension Agent {
    /// Time from the last "reachable again" to the channel's `hello` (benchmark figure).
    package func lastReconnectDuration() async -> Duration? {
        await channel?.lastOpenAfterReachable
    }
}
