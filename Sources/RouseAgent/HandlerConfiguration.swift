import FoundationEssentials
import RouseAgentCore
import RouseSystem

/// One handler's configuration file (`/etc/rouse/handlers.d/<name>.toml`):
///
/// ```toml
/// topic = "com.example.rouse"              # bundle id; VoIP pushes come on topic + ".voip"
/// command = ["/usr/bin/rouse-example-handler", "--mode", "report"]
/// push-types = ["voip", "background"]
/// user = "rouse"                           # optional: run as this user (the agent must be root to switch);
///                                          # default: the agent's handler user (--handler-user)
/// group = "rouse"                          # optional: and group (default: the user's primary group)
/// allow-root = false                       # optional: true lets it run as root (user or group root)
/// environment = ["TZ", "MODE=night"]       # optional: NAME passes the agent's variable, NAME=value sets one
/// allow-private-destinations = false       # optional: true lets its transfers reach loopback, link-local,
///                                          # private and unique-local addresses
/// [limits]                                 # optional, iOS defaults
/// voip-deadline-seconds = 5
/// strikes = 3
/// strike-window-seconds = 86400
/// stale-seconds = 60
/// background-seconds = 30
/// background-per-hour = 3
/// background-burst = 3
/// task-budget-seconds = 30
/// task-expiry-notice-seconds = 5
/// task-grace-seconds = 1
/// suspend-after-seconds = 1
/// launch-deadline-seconds = 10
/// tasks-max = 256                          # its cgroup's pids.max
/// memory-max-mib = 1024                    # its cgroup's memory.max
/// termination-grace-seconds = 5            # willTerminate → SIGKILL (0 to 20)
/// background-cpu-percent = 50              # of one core in the background (0 off, to 100 × cores)
/// background-cpu-window-seconds = 30       # over it in a window: throttled, then terminated
/// ```
///
/// `fetch-minimum-seconds = 900` (top level, optional, 1 to 86400) declares background fetch: the agent wakes the
/// handler at opportunities no closer than that (docs/agent.md, "Background fetch").
package struct HandlerConfiguration: Sendable, Equatable {
    /// Name (the file's stem).
    package var name: String
    /// Bundle id.
    package var topic: String
    /// Executable path and arguments.
    package var command: [String]
    /// Push types it takes.
    package var pushTypes: [String]
    /// User it runs as (nil: the agent's); another user than the agent's needs the agent to run as root.
    package var user: String?
    /// Group it runs as (nil: the user's primary group, or the agent's).
    package var group: String?
    /// It may run as root (`allow-root = true`): without it, a root agent refuses to launch it as uid or gid 0.
    package var allowRoot: Bool
    /// What its environment gets beyond the allow-list: `NAME` (passed from the agent's) or `NAME=value`.
    package var environment: [String]
    /// Rules.
    package var rules: HandlerRules
    /// Background fetch's minimum interval (`fetch-minimum-seconds`); nil: the handler does not fetch.
    package var fetchMinimum: Duration?
    /// Most processes and threads in its cgroup (`pids.max`; `[limits] tasks-max`).
    package var tasksMax = 256
    /// Most memory of its cgroup (`memory.max`; `[limits] memory-max-mib`).
    package var memoryMaxBytes: Int64 = 1 << 30
    /// Its background transfers may reach loopback, link-local, private and unique-local addresses
    /// (`allow-private-destinations = true`); without it only public ones (the agent's sockets are root's).
    package var allowPrivateDestinations = false
    /// What happens where it would be frozen (`exits-on-suspend`, `listening-sockets`, `exclusive-files`,
    /// `silent-audio-grace-seconds`; HandlerConfiguration+Freeze.swift).
    package var freeze = FreezeRules()

    /// A configuration.
    package init(
        name: String, topic: String, command: [String], pushTypes: [String] = ["voip", "background"],
        user: String? = nil, group: String? = nil, allowRoot: Bool = false, environment: [String] = [],
        rules: HandlerRules = HandlerRules()
    ) {
        self.name = name
        self.topic = topic
        self.command = command
        self.pushTypes = pushTypes
        self.user = user
        self.group = group
        self.allowRoot = allowRoot
        self.environment = environment
        self.rules = rules
    }

    /// The APNs topics it takes pushes for (and has tokens for).
    package var topics: [String] {
        var result: [String] = []
        if pushTypes.contains("voip") { result.append(topic + ".voip") }
        if pushTypes.contains(where: { $0 != "voip" }) { result.append(topic) }
        return result
    }

    /// Parses one file.
    package static func parse(_ text: String, name: String, file: String) throws(AgentError) -> HandlerConfiguration {
        let values = try TOMLSubset.parse(text, file: file)
        let known: Set<String> = Set([
            "topic", "command", "push-types", "user", "group", "allow-root", "environment", "fetch-minimum-seconds",
            "allow-private-destinations",
            "limits.voip-deadline-seconds", "limits.strikes",
            "limits.strike-window-seconds", "limits.stale-seconds", "limits.background-seconds",
            "limits.background-per-hour", "limits.background-burst", "limits.task-budget-seconds",
            "limits.task-expiry-notice-seconds", "limits.task-grace-seconds", "limits.suspend-after-seconds",
            "limits.launch-deadline-seconds", "limits.tasks-max", "limits.memory-max-mib",
            "limits.termination-grace-seconds", "limits.background-cpu-percent", "limits.background-cpu-window-seconds",
        ]).union(Self.freezeKeys)
        if let unknown = values.keys.sorted().first(where: { !known.contains($0) }) {
            throw .configuration("\(file): unknown key \(unknown)")
        }
        guard case .string(let topic)? = values["topic"], !topic.isEmpty else {
            throw .configuration("\(file): topic (a non-empty string) is required")
        }
        guard case .array(let commandValues)? = values["command"], !commandValues.isEmpty else {
            throw .configuration("\(file): command (a non-empty array of strings) is required")
        }
        var command: [String] = []
        for value in commandValues {
            guard case .string(let text) = value else { throw .configuration("\(file): command holds a non-string") }
            command.append(text)
        }
        guard command[0].hasPrefix("/") else { throw .configuration("\(file): command[0] must be an absolute path") }
        var pushTypes = ["voip", "background"]
        if let value = values["push-types"] {
            guard case .array(let items) = value else { throw .configuration("\(file): push-types must be an array") }
            pushTypes = []
            for item in items {
                guard case .string(let text) = item, ["voip", "background", "alert"].contains(text) else {
                    throw .configuration("\(file): push-types: each of voip, background, alert")
                }
                pushTypes.append(text)
            }
        }
        var user: String?
        if let value = values["user"] {
            guard case .string(let text) = value else { throw .configuration("\(file): user must be a string") }
            user = text
        }
        var group: String?
        if let value = values["group"] {
            guard case .string(let text) = value else { throw .configuration("\(file): group must be a string") }
            group = text
        }
        if let user, try AgentError.wrapping(try Sys.account(named: user)) == nil {
            throw .configuration("\(file): unknown user \(user)")
        }
        if let group, try AgentError.wrapping(try Sys.group(named: group)) == nil {
            throw .configuration("\(file): unknown group \(group)")
        }
        var allowRoot = false
        if let value = values["allow-root"] {
            guard case .bool(let flag) = value else {
                throw .configuration("\(file): allow-root must be true or false")
            }
            allowRoot = flag
        }
        var environment: [String] = []
        if let value = values["environment"] {
            guard case .array(let items) = value else {
                throw .configuration("\(file): environment must be an array of strings")
            }
            for item in items {
                guard case .string(let text) = item, Self.isEnvironmentEntry(text) else {
                    throw .configuration(
                        "\(file): environment: each entry is NAME or NAME=value (NAME: A-Z, a-z, 0-9, _)")
                }
                environment.append(text)
            }
        }
        var rules = HandlerRules()
        // Bounded, so that no value can overflow the deadline arithmetic (a year of seconds, a million events).
        func seconds(_ key: String) throws(AgentError) -> Duration? {
            guard let value = try number(key, max: Self.maxSeconds) else { return nil }
            return .milliseconds(Int64((value * 1000).rounded()))
        }
        func number(_ key: String, max: Double = Self.maxCount) throws(AgentError) -> Double? {
            guard let value = values["limits." + key] else { return nil }
            let number: Double
            switch value {
            case .integer(let n): number = Double(n)
            case .float(let x): number = x
            default: throw .configuration("\(file): limits.\(key) must be a non-negative number")
            }
            guard number >= 0, number <= max else {
                throw .configuration("\(file): limits.\(key) must be a number from 0 to \(Int(max))")
            }
            return number
        }
        if let v = try seconds("voip-deadline-seconds") { rules.voipDeadline = v }
        if let v = try number("strikes") { rules.strikeLimit = max(1, Int(v)) }
        if let v = try seconds("strike-window-seconds") { rules.strikeWindow = v }
        if let v = try seconds("stale-seconds") { rules.staleAfter = v }
        if let v = try seconds("background-seconds") { rules.backgroundDeadline = v }
        if let v = try number("background-per-hour") { rules.backgroundPerHour = v }
        if let v = try number("background-burst") { rules.backgroundBurst = max(1, Int(v)) }
        if let v = try seconds("task-budget-seconds") { rules.taskBudget = v }
        if let v = try seconds("task-expiry-notice-seconds") { rules.taskExpiryNotice = v }
        if let v = try seconds("task-grace-seconds") { rules.taskGrace = v }
        if let v = try seconds("suspend-after-seconds") { rules.suspendAfter = v }
        if let v = try seconds("launch-deadline-seconds") { rules.launchDeadline = v }
        if let v = try number("termination-grace-seconds", max: 20) {
            rules.terminationGrace = .milliseconds(Int64((v * 1000).rounded()))
        }
        // A percent of one core: at most every core (0: no budget).
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        if let v = try number("background-cpu-percent", max: Double(100 * cores)) {
            rules.backgroundCPU.percent = Int(v.rounded())
        }
        if let v = try seconds("background-cpu-window-seconds") {
            guard v >= .seconds(1) else {
                throw .configuration("\(file): limits.background-cpu-window-seconds must be at least 1")
            }
            rules.backgroundCPU.window = v
        }
        var configuration = HandlerConfiguration(
            name: name, topic: topic, command: command, pushTypes: pushTypes, user: user, group: group,
            allowRoot: allowRoot, environment: environment, rules: rules)
        if let v = try number("tasks-max", max: 1_000_000) { configuration.tasksMax = max(1, Int(v)) }
        if let v = try number("memory-max-mib", max: 1_048_576) {
            configuration.memoryMaxBytes = max(1, Int64(v)) << 20
        }
        if let value = values["allow-private-destinations"] {
            guard case .bool(let flag) = value else {
                throw .configuration("\(file): allow-private-destinations must be true or false")
            }
            configuration.allowPrivateDestinations = flag
        }
        if let value = values["fetch-minimum-seconds"] {
            guard case .integer(let seconds) = value, (1...86400).contains(seconds) else {
                throw .configuration("\(file): fetch-minimum-seconds must be a whole number from 1 to 86400")
            }
            configuration.fetchMinimum = .seconds(seconds)
        }
        try configuration.parseFreezeRules(values, file: file)
        return configuration
    }

    /// Why the handler file or directory at `path` cannot be trusted (nil: it can): not owned by root or `owner`,
    /// or writable by group or others.
    static func trustProblem(_ path: String, owner: UInt32) -> String? {
        guard let status = (try? Sys.status(path)) ?? nil else { return "\(path) cannot be read" }
        if status.uid != 0 && status.uid != owner {
            return "\(path) is owned by uid \(status.uid), neither root nor the agent's user (uid \(owner))"
        }
        if status.writableByOthers {
            return "\(path) is writable by group or others (mode \(status.octal)): it could name any program to run"
        }
        return nil
    }

    /// Largest `*-seconds` limit: a year.
    static let maxSeconds = 366.0 * 86400
    /// Largest count or rate limit.
    static let maxCount = 1_000_000.0

    private static func isEnvironmentEntry(_ text: String) -> Bool {
        let name = text.prefix { $0 != "=" }
        guard let first = name.unicodeScalars.first, first != "_" || name.count > 1, !("0"..."9").contains(first)
        else { return false }
        return name.unicodeScalars.allSatisfy {
            ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
        }
    }

    /// Every `*.toml` file of `directory`, sorted by name. The directory and each file must be owned by root or
    /// the agent's user (`owner`, default: the agent's uid) and writable by nobody else: a handler file says what runs, as whom, with
    /// `allow-root` (as sshd's `StrictModes` treats `authorized_keys`).
    package static func load(directory: String, owner: UInt32? = nil) throws -> [HandlerConfiguration] {
        let owner = owner ?? Sys.uid
        if let problem = trustProblem(directory, owner: owner) { throw AgentError.configuration(problem) }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".toml") }
            .sorted()
        var result: [HandlerConfiguration] = []
        for file in files {
            let path = directory + "/" + file
            if let problem = trustProblem(path, owner: owner) { throw AgentError.configuration(problem) }
            let text = try String(contentsOfFile: path, encoding: .utf8)
            result.append(try parse(text, name: String(file.dropLast(5)), file: path))
        }
        return result
    }
}
