import RouseSystem

/// Who a handler runs as and what it is given: resolved at each launch from its file, the agent's own identity
/// and the agent's default handler user.
///
/// A root agent never hands root to a handler by default: a handler without `user =` runs as the configured
/// unprivileged user (`--handler-user`, `rouse-handler` unless set), and one that would run as root (uid or gid 0)
/// is refused unless its file says `allow-root = true`. An agent that is not root (the per-user mode) runs every
/// handler as itself and refuses a file naming another user.
struct HandlerCredentials: Sendable, Equatable {
    /// The account the handler runs as.
    var account: Sys.Account
    /// Its group.
    var gid: UInt32
    /// Supplementary groups (the account's, as `initgroups` would set them).
    var groups: [UInt32]
    /// The child must switch to this identity (fork, setgroups, setgid, setuid) rather than keep the agent's.
    var switches: Bool

    /// The identity of `handler`, or why it may not be launched (a lookup that failed, `EMFILE` reading
    /// /etc/passwd for one, is thrown as that system error: a shortage to wait out, not a refusal).
    static func resolve(
        _ handler: HandlerConfiguration, agentUID: UInt32, agentGID: UInt32, defaultUser: String
    ) throws(AgentError) -> HandlerCredentials {
        guard agentUID == 0 else {
            guard let own = try AgentError.wrapping(try Sys.account(uid: agentUID)) else {
                throw .identity("the agent's uid \(agentUID) has no account")
            }
            if let user = handler.user, try AgentError.wrapping(try Sys.account(named: user))?.uid != agentUID {
                throw .identity("handler \(handler.name) names user \(user): only a root agent switches users")
            }
            if let group = handler.group, try AgentError.wrapping(try Sys.group(named: group)) != agentGID {
                throw .identity("handler \(handler.name) names group \(group): only a root agent switches groups")
            }
            return HandlerCredentials(account: own, gid: agentGID, groups: [], switches: false)
        }
        let name = handler.user ?? (handler.allowRoot ? "root" : defaultUser)
        guard let account = try AgentError.wrapping(try Sys.account(named: name)) else {
            let hint =
                handler.user == nil
                ? " (the agent's handler user: create it, or set user = in the handler file)" : ""
            throw .identity("handler \(handler.name): user \(name) does not exist\(hint)")
        }
        var gid = account.gid
        if let group = handler.group {
            guard let named = try AgentError.wrapping(try Sys.group(named: group)) else {
                throw .identity("handler \(handler.name): group \(group) does not exist")
            }
            gid = named
        }
        if (account.uid == 0 || gid == 0) && !handler.allowRoot {
            throw .identity(
                "handler \(handler.name) would run as root (user \(name), gid \(gid)): its file must say allow-root = true"
            )
        }
        if account.uid == 0 && gid == 0 {
            return HandlerCredentials(account: account, gid: 0, groups: [], switches: false)
        }
        return HandlerCredentials(
            account: account, gid: gid, groups: Sys.groups(of: account.name, gid: gid), switches: true)
    }

    /// Variables a handler gets from the agent's own environment: the search path, the locale and Rouse's own.
    static func inherited(_ name: String) -> Bool {
        name == "PATH" || name == "LANG" || name.hasPrefix("ROUSE_")
    }

    /// What a handler of the per-user mode gets from the session beyond ``inherited(_:)``: the locale, the display
    /// (Wayland, X11), the session bus, the audio server (PipeWire, PulseAudio), the XDG directories, the shell.
    /// Not the user's SSH agent (`SSH_AUTH_SOCK`: it would sign in as the user elsewhere) nor GnuPG's: a handler
    /// that needs one names it in its file (`environment = ["SSH_AUTH_SOCK"]`).
    static func inheritedInSession(_ name: String) -> Bool {
        inherited(name) || name.hasPrefix("LC_") || name.hasPrefix("XDG_")
            || [
                "LANGUAGE", "TZ", "SHELL", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS",
                "PULSE_SERVER", "PULSE_COOKIE", "PIPEWIRE_REMOTE", "PIPEWIRE_RUNTIME_DIR",
            ].contains(name)
    }

    /// The search path when the agent has none.
    static let defaultPath = "/usr/local/bin:/usr/bin:/bin"

    /// A handler's environment: `PATH`, `LANG` and `ROUSE_*` of `agent` (the agent's environment), `HOME`, `USER`
    /// and `LOGNAME` of the account it runs as, what its file lists (`NAME` passes the variable from `agent`,
    /// `NAME=value` sets it; in the per-user mode `NAME` is looked up in the session first), then `extra` (the
    /// agent's configuration). Nothing else of the agent's: not its
    /// credentials directory, its notify socket, nor anything a service manager or a shell put there.
    /// With `session` (the per-user mode: the user manager's environment, over the agent's), the session's
    /// display, bus, audio server and XDG variables are passed too (``inheritedInSession(_:)``).
    func environment(
        for handler: HandlerConfiguration, agent: [String: String], extra: [String: String],
        session: [String: String]? = nil
    ) -> [String: String] {
        var result: [String: String]
        if let session {
            result = agent.merging(session) { $1 }.filter { Self.inheritedInSession($0.key) }
        } else {
            result = agent.filter { Self.inherited($0.key) }
        }
        if result["PATH"] == nil { result["PATH"] = Self.defaultPath }
        result["HOME"] = account.home
        result["USER"] = account.name
        result["LOGNAME"] = account.name
        for entry in handler.environment {
            if let equals = entry.firstIndex(of: "=") {
                result[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
            } else if let value = session?[entry] ?? agent[entry] {
                result[entry] = value
            }
        }
        for (key, value) in extra { result[key] = value }
        return result
    }
}
