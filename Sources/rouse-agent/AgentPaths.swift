import ArgumentParser

/// Where the agent keeps its files: fixed paths for the system service, the XDG base directories of the user for
/// the per-user mode (`--user`).
struct AgentPaths {
    var handlers: String
    var state: String
    var socket: String

    init(user: Bool, environment: [String: String]) throws {
        guard user else {
            (handlers, state, socket) = ("/etc/rouse/handlers.d", "/var/lib/rouse", "/run/rouse/agent.sock")
            return
        }
        func directory(_ name: String, _ fallback: String) throws -> String {
            if let value = environment[name], value.hasPrefix("/") { return value }
            guard let home = environment["HOME"], home.hasPrefix("/") else {
                throw ValidationError("--user needs $\(name) or $HOME")
            }
            return home + fallback
        }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else {
            throw ValidationError("--user needs $XDG_RUNTIME_DIR (a systemd user service has it)")
        }
        handlers = try directory("XDG_CONFIG_HOME", "/.config") + "/rouse/handlers.d"
        state = try directory("XDG_STATE_HOME", "/.local/state") + "/rouse"
        socket = runtime + "/rouse/agent.sock"
    }
}
