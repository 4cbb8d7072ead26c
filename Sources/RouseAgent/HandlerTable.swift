import FoundationEssentials
import RouseAgentCore
import RouseWire

/// Handler lifecycle's state: every configured handler's configuration, its rules (``HandlerMachine``), its running
/// process and IPC connection, and how its last launch went. Owned by the ``Agent`` and touched only on its
/// isolation. A name that is not configured has no entry: reads answer nil and steps do nothing.
final class HandlerTable {
    private struct Entry {
        var configuration: HandlerConfiguration
        var machine: HandlerMachine
        var process: HandlerProcess?
        var connection: IPCConnection?
        /// Why it was last launched (`voipPush`, `user`, `reattached`…), told to it when it registers.
        var launchReason: String?
        /// Why its last launch was refused (its identity or executable), until a launch succeeds.
        var launchRefused: String?
        /// Launches that failed for a shortage since the last one that worked.
        var launchAttempts = 0
        /// Whether its rules wait for input it wrote before a due deadline.
        var inputHold = InputBeforeDeadline()

        /// Runs `body` on the machine in place (through optional chaining on the dictionary: no copy).
        mutating func step<Result>(_ body: (inout HandlerMachine) -> Result) -> Result { body(&machine) }
    }

    private var entries: [String: Entry] = [:]

    /// The configured handlers' names, sorted: the order every sweep over them takes.
    var names: [String] { entries.keys.sorted() }

    /// Whether `name` is configured.
    func contains(_ name: String) -> Bool { entries[name] != nil }

    /// `name`'s configuration.
    func configuration(of name: String) -> HandlerConfiguration? { entries[name]?.configuration }

    /// `name`'s rules as they stand (a copy: steps go through ``step(_:_:)``).
    func machine(of name: String) -> HandlerMachine? { entries[name]?.machine }

    /// `name`'s running process (launched or re-attached).
    func process(of name: String) -> HandlerProcess? { entries[name]?.process }

    /// `name`'s registered IPC connection.
    func connection(of name: String) -> IPCConnection? { entries[name]?.connection }

    /// Why `name` was last launched.
    func launchReason(of name: String) -> String? { entries[name]?.launchReason }

    /// Why `name`'s last launch was refused, if it was.
    func launchRefused(of name: String) -> String? { entries[name]?.launchRefused }

    /// Launches of `name` that failed for a shortage since the last one that worked.
    func launchAttempts(of name: String) -> Int { entries[name]?.launchAttempts ?? 0 }

    /// Every running handler process.
    var processes: [HandlerProcess] { entries.values.compactMap(\.process) }

    // MARK: Configuration

    /// Adds handler `configuration.name` with its rules.
    func add(_ configuration: HandlerConfiguration, machine: HandlerMachine) {
        entries[configuration.name] = Entry(configuration: configuration, machine: machine)
    }

    /// Drops `name`; returns what ran of it (the caller stops them).
    func remove(_ name: String) -> (process: HandlerProcess?, connection: IPCConnection?) {
        let entry = entries.removeValue(forKey: name)
        return (entry?.process, entry?.connection)
    }

    /// Takes a changed configuration (its rules too); false when it is unchanged or not configured.
    func reconfigure(_ configuration: HandlerConfiguration) -> Bool {
        guard var entry = entries[configuration.name], entry.configuration != configuration else { return false }
        entry.configuration = configuration
        entry.machine.rules = configuration.rules
        entries[configuration.name] = entry
        return true
    }

    // MARK: Rules

    /// One step of `name`'s rules; no actions when it is not configured.
    func step(_ name: String, _ body: (inout HandlerMachine) -> [HandlerAction]) -> [HandlerAction] {
        entries[name]?.step(body) ?? []
    }

    /// One step of `name`'s rules that answers something besides its actions; nil when it is not configured.
    func step<Answer>(
        _ name: String, _ body: (inout HandlerMachine) -> (Answer, [HandlerAction])
    ) -> (Answer, [HandlerAction])? {
        entries[name]?.step(body)
    }

    /// The earliest deadline of any handler's rules (a handler whose rules wait for its input: when they look again).
    func nextDeadline(now: Duration) -> Duration? {
        entries.values.compactMap { $0.inputHold.nextDeadline($0.machine.nextDeadline(now: now), now: now) }.min()
    }

    /// Whether `name`'s rules wait at `now` for input its handler wrote before a due deadline
    /// (``InputBeforeDeadline``): its connection has bytes or frames the agent has not handled yet.
    func waitsForInput(_ name: String, now: Duration) -> Bool {
        guard let entry = entries[name] else { return false }
        let deadline = entry.machine.nextDeadline(now: now)
        // The connection is asked only when a deadline is due (a peek at its socket).
        let waiting = deadline.map { $0 <= now } == true && entry.connection?.inputWaiting == true
        return entries[name]?.inputHold.holds(deadline: deadline, inputWaiting: waiting, now: now) ?? false
    }

    /// The handler a push goes to: the first, by name, that takes its topic and push type.
    func handler(for push: AgentPush) -> String? {
        names.first { name in
            guard let handler = entries[name]?.configuration else { return false }
            return handler.topics.contains(push.topic) && handler.pushTypes.contains(push.pushType)
        }
    }

    /// Tells `name`'s rules whether it holds audio that keeps it running; true when that changed.
    func setHoldsAudio(_ name: String, _ holds: Bool, now: Duration) -> Bool {
        guard let machine = entries[name]?.machine, machine.holdsAudio != holds else { return false }
        entries[name]?.machine.setHoldsAudio(holds, now: now)
        return true
    }

    /// The handlers' strikes and VoIP blocks by topic (handlers sharing a topic are merged: most strikes, blocked if
    /// any is), sorted by topic: what the gateway is told.
    func report() -> DeviceHandlerReport {
        var byTopic: [String: (strikes: Int, blocked: Bool)] = [:]
        for entry in entries.values {
            let old = byTopic[entry.configuration.topic] ?? (0, false)
            byTopic[entry.configuration.topic] = (
                max(old.strikes, entry.machine.strikeCount), old.blocked || entry.machine.voipBlocked
            )
        }
        return DeviceHandlerReport(
            handlers: byTopic.sorted { $0.key < $1.key }.map { topic, value in
                DeviceHandlerReport.Handler(topic: topic, strikes: value.strikes, voipBlocked: value.blocked)
            })
    }

    // MARK: Processes and connections

    /// `name`'s process was launched (or re-attached, `reason` `reattached`): its rules see it launching.
    func launched(_ name: String, _ process: HandlerProcess, reason: String, now: Duration) {
        guard entries[name] != nil else { return }
        entries[name]?.process = process
        entries[name]?.launchReason = reason
        entries[name]?.launchRefused = nil
        entries[name]?.launchAttempts = 0
        entries[name]?.machine.launched(now: now)
    }

    /// `name` may not be launched, for `detail`.
    func launchRefused(_ name: String, _ detail: String) {
        entries[name]?.launchRefused = detail
    }

    /// A launch of `name` failed for a shortage and is tried again.
    func countLaunchAttempt(_ name: String) {
        entries[name]?.launchAttempts += 1
    }

    /// `process` exited: when it is `name`'s running one, it is forgotten and its connection closed (true).
    func processExited(_ name: String, _ process: HandlerProcess) -> Bool {
        guard let entry = entries[name], entry.process === process else { return false }
        entry.connection?.close()
        entries[name]?.process = nil
        entries[name]?.connection = nil
        return true
    }

    /// `connection` registered as `name`.
    func attach(_ name: String, _ connection: IPCConnection) {
        entries[name]?.connection = connection
    }

    /// `connection` closed: when it is `name`'s, `name` has none any more (true).
    func detach(_ name: String, _ connection: IPCConnection) -> Bool {
        guard entries[name]?.connection === connection else { return false }
        entries[name]?.connection = nil
        return true
    }
}
