import FoundationEssentials
import RouseState
import RouseSystem

/// The user's systemd manager, for the per-user mode.
enum UserManager {
    /// The manager's environment (`systemctl --user show-environment`): what the session exported to it
    /// (`WAYLAND_DISPLAY`, `DISPLAY`, `DBUS_SESSION_BUS_ADDRESS`, …). Empty when there is no manager to ask. Read
    /// on a thread of its own: the program may take a while to answer, and the agent's loop must not wait for it.
    static func environment(systemctl program: String) async -> [String: String] {
        await withCheckedContinuation { (continuation: CheckedContinuation<[String: String], Never>) in
            Sys.detachedThread(name: "rouse-agent-env") { continuation.resume(returning: read(program)) }
        }
    }

    private static func read(_ program: String) -> [String: String] {
        guard FileManager.default.isExecutableFile(atPath: program),
            let result = try? ShortChild.run(program, ["--user", "show-environment"], input: []), result.status == 0
        else { return [:] }
        var environment: [String: String] = [:]
        for line in String(decoding: result.output, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return environment
    }
}
