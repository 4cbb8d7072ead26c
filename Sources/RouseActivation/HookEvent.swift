/// A grant or a revoke, for the optional hook command that lets an installation cork or duck its
/// PulseAudio/PipeWire streams by role.
///
/// A *grant* is a session starting to play (granted, call activated, resumed after an interruption,
/// delayed request granted); a *revoke* is a session that stops (deactivated, interrupted, suspended, call
/// ended, holder gone — a dead holder's sessions are revoked too). In one arbiter step, revokes come
/// before grants. Ducking alone changes no grant.
///
/// Hook command contract (the agent runs the configured command once per event, in order, without a
/// shell, and waits for it with a deadline; its exit status is logged, never acted on):
///
///     argv: <hook> grant|revoke
///     env:  ROUSE_EVENT=grant|revoke
///           ROUSE_SESSION=<handler>/<name>   ROUSE_HANDLER=<handler>
///           ROUSE_ROLE=ambient|media|notification|navigation|assistant|call|alert
///           ROUSE_CATEGORY=<category>  ROUSE_MODE=<mode>  ROUSE_OPTIONS=<comma-separated options>
///           ROUSE_ACTIVE_ROLES=<comma-separated roles of every active session after the step>
///           ROUSE_DUCKING_ROLES=<comma-separated roles of active sessions with duckOthers after the step>
///
/// The two `*_ROLES` variables describe the state after the step, so a hook can be level-triggered
/// (`deploy/hooks/pactl-roles.sh` is).
public struct HookEvent: Sendable, Hashable {
    /// Grant or revoke.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The session started playing.
        case grant
        /// The session stopped playing.
        case revoke
    }

    /// Grant or revoke.
    public var kind: Kind
    /// The session.
    public var session: SessionID
    /// Its role.
    public var role: ActivationPriority
    /// Its configuration.
    public var configuration: SessionConfiguration
    /// Roles of all active sessions after the step (sorted, unique).
    public var activeRoles: [ActivationPriority]
    /// Roles of active sessions with `duckOthers` after the step (sorted, unique).
    public var duckingRoles: [ActivationPriority]

    /// The argument vector after the command itself.
    public var arguments: [String] { [kind.rawValue] }

    /// The environment variables of the contract above.
    public var environment: [String: String] {
        [
            "ROUSE_EVENT": kind.rawValue,
            "ROUSE_SESSION": session.description,
            "ROUSE_HANDLER": session.handler.rawValue,
            "ROUSE_ROLE": role.rawValue,
            "ROUSE_CATEGORY": configuration.category.rawValue,
            "ROUSE_MODE": configuration.mode.rawValue,
            "ROUSE_OPTIONS": configuration.options.members.map(\.rawValue).joined(separator: ","),
            "ROUSE_ACTIVE_ROLES": activeRoles.map(\.rawValue).joined(separator: ","),
            "ROUSE_DUCKING_ROLES": duckingRoles.map(\.rawValue).joined(separator: ","),
        ]
    }
}
