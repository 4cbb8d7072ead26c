/// The limits a handler is held to, with iOS's defaults (configurable per handler in its TOML file).
package struct HandlerRules: Sendable, Equatable, Codable {
    /// From delivery of a VoIP push that must be reported to the call report (callservicesd: ~5–7 s).
    package var voipDeadline: Duration = .seconds(5)
    /// Strikes within ``strikeWindow`` that stop VoIP launches until the handler is registered again.
    package var strikeLimit: Int = 3
    /// Window in which strikes count.
    package var strikeWindow: Duration = .seconds(24 * 3600)
    /// A VoIP push older than this (from the gateway's receipt) is stale: no report owed.
    package var staleAfter: Duration = .seconds(60)
    /// Wall-clock budget of a background push until `complete`.
    package var backgroundDeadline: Duration = .seconds(30)
    /// Background pushes per hour (token bucket refill).
    package var backgroundPerHour: Double = 3
    /// Token bucket size (burst).
    package var backgroundBurst: Int = 3
    /// Background-task budget per handler, from entering the background.
    package var taskBudget: Duration = .seconds(30)
    /// The expiration notice comes this long before the budget ends.
    package var taskExpiryNotice: Duration = .seconds(5)
    /// Grace after the budget ended before a handler with open tasks is terminated.
    package var taskGrace: Duration = .seconds(1)
    /// A launched handler must register over IPC within this time, else it is killed (a strike when a VoIP
    /// push was waiting for it: iOS counts apps that crash on launch).
    package var launchDeadline: Duration = .seconds(10)
    /// Idle time in the background (nothing open) before the handler is suspended.
    package var suspendAfter: Duration = .seconds(1)
    /// Budget of a keep-alive wake (`setKeepAlive`; iOS gives its keep-alive handler about 10 s), after which the
    /// handler is suspended again.
    package var keepAliveBudget: Duration = .seconds(10)
    /// A handler that exits with socket wakes unanswered (a strike) has its watched sockets left unarmed this long,
    /// so unread data on them cannot relaunch it in a tight loop.
    package var socketWakeBackoff: Duration = .seconds(5)
    /// From the `willTerminate` notice to the kill when the agent stops a running handler (`[limits]
    /// termination-grace-seconds`, at most ``maxTerminationGrace``): the handler may exit before.
    package var terminationGrace: Duration = .seconds(5)
    /// Largest termination grace: the agent's unit gives the whole stop 30 s (`TimeoutStopSec`), preservation 1 s.
    package static let maxTerminationGrace = Duration.seconds(20)
    /// CPU budget while running in the background (`[limits] background-cpu-percent`, 0 off, and
    /// `background-cpu-window-seconds`): over it, throttled, then terminated (``CPUBudgetMeter``).
    package var backgroundCPU = CPUBudget()

    /// The defaults.
    package init() {}

    enum CodingKeys: CodingKey {}
    package init(from decoder: any Decoder) throws { self.init() }
    package func encode(to encoder: any Encoder) throws {}
}
