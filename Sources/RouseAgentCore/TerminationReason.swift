/// Why the agent stops a handler: the agent's own reasons are static members, the rules' deadline reasons are
/// words (`"no call reported within the deadline"`); a string literal is a reason, so a rule reads as before.
/// It decides the notice: see ``HandlerTermination``.
package struct TerminationReason: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The reason in words (logged, and sent as `willTerminate`'s `reason`).
    package var rawValue: String

    /// A reason.
    package init(rawValue: String) { self.rawValue = rawValue }

    /// A reason from a literal.
    package init(stringLiteral value: String) { self.rawValue = value }

    /// The reason in words.
    package var description: String { rawValue }

    /// The user stopped (force-quit) the handler: `rouse agent stop`, `userControl stopped`.
    package static let userStopped: TerminationReason = "user stopped"
    /// The agent itself is stopping (SIGTERM, `systemctl stop`), the system is not going down.
    package static let agentStopping: TerminationReason = "agent stopping"
    /// The system is shutting down or rebooting (logind `PrepareForShutdown`): no notice, as iOS at reboot.
    package static let systemShutdown: TerminationReason = "system shutdown"
    /// A reload removed the handler's file.
    package static let handlerRemoved: TerminationReason = "handler removed"

    /// Whether a running handler is told before it is killed for this reason (every reason but a system
    /// shutdown: iOS does not call `applicationWillTerminate` when the device reboots).
    package var givesNotice: Bool { self != .systemShutdown }
}
