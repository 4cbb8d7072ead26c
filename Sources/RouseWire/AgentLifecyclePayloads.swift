// The payloads of the rest of the app lifecycle (issue 29): the termination notice, the time-change notice
// (docs/handler-protocol.md, "willTerminate", "timeChanged"); `restorationFinished` carries no payload.

extension AgentEvent {
    /// `willTerminate`: the agent is about to stop the handler (iOS's `applicationWillTerminate`). The handler has
    /// `seconds` to hang up, save and exit by itself; after that it is killed (SIGKILL). Not sent to a frozen
    /// handler (it is killed without notice, as iOS purges suspended apps) nor at system shutdown.
    public struct WillTerminate: Sendable, Equatable, Codable {
        /// Why: `userStopped`, `agentStopping`, `handlerRemoved`, or a rule's reason in words.
        public var reason: String
        /// The grace period in seconds before the kill.
        public var seconds: Double

        /// A termination notice.
        public init(reason: String, seconds: Double) {
            self.reason = reason
            self.seconds = seconds
        }
    }

    /// `timeChanged`: the wall clock stepped (`clockStep`: set by NTP, an administrator, a resume) or the time zone
    /// changed (`timeZone`). Both may be set at once: a frozen handler gets one notice at its wake for everything that
    /// changed while it slept (iOS's `UIApplicationSignificantTimeChangeNotification`). Wall-clock timers and
    /// displayed times should be recomputed.
    public struct TimeChanged: Sendable, Equatable, Codable {
        /// The wall clock was set.
        public var clockStep: Bool
        /// The time zone (`/etc/localtime`) changed.
        public var timeZone: Bool
        /// UNIX milliseconds when the agent sent the notice.
        public var wallMilliseconds: Int64

        /// A time-change notice.
        public init(clockStep: Bool, timeZone: Bool, wallMilliseconds: Int64) {
            self.clockStep = clockStep
            self.timeZone = timeZone
            self.wallMilliseconds = wallMilliseconds
        }
    }
}
