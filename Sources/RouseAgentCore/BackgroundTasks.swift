import RouseClock

/// One handler's background time (iOS's `beginBackgroundTask` budget): when it entered the background (the
/// budget's start), its open tasks, and whether their expiry notice went out. A part of ``HandlerMachine`` that owns
/// only this state; the machine says when the handler is in the foreground (no budget runs there).
struct BackgroundTasks: Sendable, Equatable {
    /// When the handler entered the background; nil in the foreground or not running.
    private(set) var since: Duration?
    /// Open tasks: token → name.
    private(set) var open: [Int: String] = [:]
    private var nextID = 1
    private var noticeSent = false
    /// Budget a re-attached handler had used before the agent restarted (applied when it registers again).
    private var restoredUsed: Duration?

    /// Into the background at `now`: a new budget.
    mutating func enterBackground(now: Duration) {
        since = now
        noticeSent = false
    }

    /// Into the foreground: no budget runs.
    mutating func enterForeground() {
        since = nil
        noticeSent = false
    }

    /// Back in the background with the budget it had, or a new one from `now` if it had none.
    mutating func continueBudget(now: Duration) {
        if since == nil { since = now }
    }

    /// Registered: a re-attached handler's budget goes on from what it had used before the restart.
    mutating func registered(now: Duration, enteredBackground: Bool) {
        if enteredBackground, let used = restoredUsed { since = now - used }
        restoredUsed = nil
    }

    /// Seconds of the budget left at `now`; nil when none runs.
    func remaining(now: Duration, budget: Duration) -> Double? {
        since.map { max(0, (budget - (now - $0)).inSeconds) }
    }

    /// A new task `name`: its token.
    mutating func begin(name: String) -> Int {
        defer { nextID += 1 }
        open[nextID] = name
        return nextID
    }

    /// Task `id` ended.
    mutating func end(id: Int) { open.removeValue(forKey: id) }

    /// The process is gone: its tasks and budget with it.
    mutating func reset() {
        open = [:]
        since = nil
        noticeSent = false
    }

    /// At `now`: the expiry notices to send (once per budget, `taskExpiryNotice` before its end), and, past the end
    /// and `taskGrace`, the names of the tasks that never ended (comma-separated).
    mutating func due(now: Duration, rules: HandlerRules) -> (expiring: [AgentMessageKind], overrun: String?) {
        guard let since, !open.isEmpty else { return ([], nil) }
        let end = since + rules.taskBudget
        var expiring: [AgentMessageKind] = []
        if !noticeSent && now >= end - rules.taskExpiryNotice {
            noticeSent = true
            let left = max(0, (end - now).inSeconds)
            for (id, name) in open.sorted(by: { $0.key < $1.key }) {
                expiring.append(.taskExpiring(id: id, name: name, seconds: left))
            }
        }
        let overrun = now >= end + rules.taskGrace ? open.values.sorted().joined(separator: ",") : nil
        return (expiring, overrun)
    }

    /// When ``due(now:rules:)`` has something next; nil without open tasks or a budget.
    func nextDeadline(rules: HandlerRules) -> Duration? {
        guard let since, !open.isEmpty else { return nil }
        let end = since + rules.taskBudget
        return noticeSent ? end + rules.taskGrace : end - rules.taskExpiryNotice
    }

    /// Restores a preserved handler's tasks and budget used (a re-attached process: they are its own).
    mutating func restore(tasks: [Int: String], used: Duration?) {
        open = tasks
        nextID = (tasks.keys.max() ?? 0) + 1
        restoredUsed = used
    }
}
