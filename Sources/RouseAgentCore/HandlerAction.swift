/// Lifecycle of one handler (iOS app states).
package enum HandlerLifecycle: String, Sendable, Codable, Equatable {
    /// Not launched (or terminated).
    case notRunning
    /// Launched, not yet registered over IPC.
    case launching
    /// Running in the background (budget clock ticking).
    case background
    /// Frozen: no code runs.
    case suspended
    /// Foreground, receiving events.
    case active
    /// Foreground, not receiving events.
    case inactive

    var isForeground: Bool { self == .active || self == .inactive }
    var isRunning: Bool { self != .notRunning }
}

/// What the I/O shell must do for a handler, in order.
package enum HandlerAction: Sendable, Equatable {
    /// Launch the handler process into the background (`reason`: `voipPush`, `backgroundPush`, `user`).
    case launch(reason: String)
    /// Hand the push over IPC; `mustReport` and the deadline in seconds (0 = none).
    case deliver(AgentPush, mustReport: Bool, deadlineSeconds: Double)
    /// Acknowledge the push to the gateway (the handler accepted it, or the rules consumed it).
    case ack(pushID: String)
    /// Stop the handler: a `willTerminate` notice and a grace when it runs, else a kill now (``HandlerTermination``).
    case kill(reason: TerminationReason)
    /// Freeze the handler.
    case suspend
    /// Thaw the handler.
    case resume
    /// Send a message to the handler.
    case notify(AgentMessageKind)
    /// Record a rule event (constant message, values in metadata).
    case log(String, [String: String])
}

/// Notifications the rules send to a handler.
package enum AgentMessageKind: Sendable, Equatable {
    /// Background task `id` expires in `seconds`.
    case taskExpiring(id: Int, name: String, seconds: Double)
    /// Task token for a `beginTask`.
    case taskBegun(id: Int, name: String)
    /// Lifecycle changed.
    case lifecycle(HandlerLifecycle)
    /// Gateway reachability (coalesced while suspended).
    case reachability(Bool)
    /// Data on watched sockets woke the handler (`wake`: its id); a report is owed within `seconds` when `mustReport`.
    case voipSocketWake(wake: String, mustReport: Bool, seconds: Double)
    /// The keep-alive time: `seconds` of budget.
    case keepAlive(id: String, seconds: Double)
    /// The wall clock stepped and/or the time zone changed (coalesced while suspended: HandlerMachine+Time).
    case timeChanged(clockStep: Bool, timeZone: Bool)
}
