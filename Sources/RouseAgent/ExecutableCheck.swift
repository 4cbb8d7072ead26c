import RouseSystem

/// Whether a handler's executable may be started as a given user, in the manner of sshd's `StrictModes`: the
/// file and every directory above it must be owned by root or by that user, and writable by nobody else (no
/// group or other write bit), so that no third user can replace what runs. A directory writable by others is
/// accepted only with the sticky bit (`/tmp`) and when the entry below it belongs to root or that user (then
/// nobody else may rename or remove it). Both the path as written and its resolved target are checked: a
/// symbolic link on the way is safe only if the directory holding it is.
enum ExecutableCheck {
    /// Nil when `path` may run as `uid`, else why not, naming the offending path.
    static func problem(executable path: String, runsAs uid: UInt32) -> String? {
        guard path.hasPrefix("/") else { return "\(path) is not an absolute path" }
        if let problem = problem(chain: path, uid: uid) { return problem }
        guard let resolved = Sys.realPath(path) else { return "\(path) does not exist" }
        return resolved == path ? nil : problem(chain: resolved, uid: uid)
    }

    /// Nil when `command` may run as `uid`: its executable, and when that is an interpreter (a shell, Python, Perl,
    /// Ruby, Node, PHP, Lua, Tcl) the script it runs (its first argument that is not an option), which is what
    /// really runs and must be as safe from other users as a program.
    static func problem(command: [String], runsAs uid: UInt32) -> String? {
        guard let executable = command.first else { return "no command" }
        if let problem = problem(executable: executable, runsAs: uid) { return problem }
        guard isInterpreter(executable) else { return nil }
        guard let index = command.indices.dropFirst().first(where: { !command[$0].hasPrefix("-") }) else {
            return nil
        }
        // `-c CODE`, `-e CODE`, `-m MODULE` (also in a cluster, `-ec`): no script file (the code is in the handler
        // file, itself checked).
        let previous = command[index - 1]
        if index > 1, previous.hasPrefix("-"), !previous.hasPrefix("--"),
            previous.dropFirst().contains(where: { "cemE".contains($0) })
        {
            return nil
        }
        let script = command[index]
        guard script.hasPrefix("/") else {
            return "the script \(script) of interpreter \(executable) must be an absolute path"
        }
        return problem(executable: script, runsAs: uid)
    }

    /// Whether `path` names an interpreter that runs a script file.
    static func isInterpreter(_ path: String) -> Bool {
        let name = String(path.split(separator: "/").last ?? "")
        let stems = [
            "sh", "bash", "dash", "zsh", "ksh", "python", "perl", "ruby", "node", "nodejs", "php", "lua", "tclsh",
        ]
        return stems.contains { stem in
            name == stem || (name.hasPrefix(stem) && name.dropFirst(stem.count).allSatisfy { $0.isNumber || $0 == "." })
        }
    }

    private static func problem(chain path: String, uid: UInt32) -> String? {
        let components = path.split(separator: "/").map(String.init)
        var prefixes = ["/"]
        for index in components.indices { prefixes.append("/" + components[...index].joined(separator: "/")) }
        for (index, directory) in prefixes.dropLast().enumerated() {
            guard let status = try? Sys.status(directory) else { return "\(directory) does not exist" }
            guard status.isDirectory else { return "\(directory) is not a directory" }
            if let problem = ownership(directory, status, uid: uid) { return problem }
            guard status.writableByOthers else { continue }
            let entry = prefixes[index + 1]
            guard status.sticky, let below = try? Sys.status(entry, follow: false),
                below.uid == 0 || below.uid == uid
            else {
                return
                    "\(directory) is writable by group or others (mode \(status.octal)): anyone could replace \(entry)"
            }
        }
        guard let status = try? Sys.status(path) else { return "\(path) does not exist" }
        guard status.isRegular else { return "\(path) is not a regular file" }
        if let problem = ownership(path, status, uid: uid) { return problem }
        guard !status.writableByOthers else { return "\(path) is writable by group or others (mode \(status.octal))" }
        return nil
    }

    private static func ownership(_ path: String, _ status: Sys.FileStatus, uid: UInt32) -> String? {
        guard status.uid != 0, status.uid != uid else { return nil }
        return "\(path) is owned by uid \(status.uid), neither root nor the handler's user (uid \(uid))"
    }
}
