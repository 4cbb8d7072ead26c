import RouseClock

/// The rules of one handler as a value-type state machine: inputs are events with the current monotonic
/// time (`now`, from an injected clock) and, for staleness, the wall time; outputs are ``HandlerAction``s.
/// Nothing here touches a process, a socket or a clock.
package struct HandlerMachine: Sendable {
    /// The limits.
    package var rules: HandlerRules
    /// Lifecycle state.
    package internal(set) var lifecycle: HandlerLifecycle = .notRunning
    /// The user stopped the handler: no background launches until started again.
    package internal(set) var userStopped = false
    /// Strikes and the VoIP block (``StrikeRecord``).
    var strikeRecord = StrikeRecord()
    /// Times of recent strikes (missed VoIP reports and socket wakes, launches not registered in time).
    package var strikes: [Duration] { strikeRecord.times }
    /// VoIP launches stopped after too many strikes (until ``reregister()``).
    package var voipBlocked: Bool { strikeRecord.blocked }
    /// Active calls reported by the handler.
    package internal(set) var activeCalls: Set<String> = []
    /// VoIP pushes owing a report: id → deadline.
    package private(set) var owedReports: [String: Duration] = [:]
    /// The pushes behind ``owedReports``: a clean exit hands them to a new launch (HandlerMachine+Exit).
    package internal(set) var owedPushes: [String: AgentPush] = [:]
    /// Pushes already handed again after a clean exit: a second unanswered exit consumes them (HandlerMachine+Exit).
    package internal(set) var handedAgain: Set<String> = []
    /// Background pushes being processed: id → deadline.
    package private(set) var openBackground: [String: Duration] = [:]
    /// The newest background push held while throttled.
    package internal(set) var held: AgentPush?
    /// Background-transfer sessions whose events the handler must acknowledge (`transfersHandled`): session →
    /// deadline.
    package private(set) var openTransferSessions: [String: Duration] = [:]
    /// Background fetches the handler must complete (`fetchComplete`): id → deadline.
    package private(set) var openFetches: [String: Duration] = [:]
    /// Socket wakes owing a report (`reportCall` or `voipWakeHandled`): wake id → deadline (HandlerMachine+Wakes).
    package internal(set) var owedWakes: [String: Duration] = [:]
    /// Socket wakes waiting for the launched handler to register.
    package internal(set) var wakesWaiting: [String] = []
    /// Its watched sockets stay unarmed until then: it exited with socket wakes unanswered (HandlerMachine+Wakes).
    package internal(set) var socketBackoffUntil: Duration?
    /// The keep-alive under way: its id and the end of its budget.
    package internal(set) var keepAlive: (id: String, deadline: Duration)?
    /// Pushes waiting for the launched handler to register.
    package internal(set) var waiting: [AgentPush] = []
    /// Its background time: budget start, open tasks, expiry notice (``BackgroundTasks``).
    var backgroundTime = BackgroundTasks()
    /// Open background tasks: token → name.
    package var tasks: [Int: String] { backgroundTime.open }
    /// When the handler entered the background (task budget start).
    package var backgroundSince: Duration? { backgroundTime.since }
    /// The handler holds an activation that keeps it running in the background (an active playback, record
    /// or call session: iOS's audio background mode); it is not suspended while this holds.
    package private(set) var holdsAudio = false
    private var launchedAt: Duration?
    var idleSince: Duration?
    /// The background-push token bucket (``BackgroundPushBucket``).
    var bucket: BackgroundPushBucket
    private var coalescedReachability: Bool?
    /// Time changes while suspended or launching, told as one notice at the wake (HandlerMachine+Time).
    var coalescedTime: (clockStep: Bool, timeZone: Bool)?

    /// A handler that is not running.
    package init(rules: HandlerRules) {
        self.rules = rules
        bucket = BackgroundPushBucket(burst: rules.backgroundBurst)
    }

    /// Strikes still inside the window.
    package var strikeCount: Int { strikes.count }

    /// Background-push tokens available at `now`.
    package func availableTokens(now: Duration) -> Double { refilled(now: now) }

    /// Seconds of the background-task budget left at `now` (nil in the foreground or not running).
    package func budgetRemaining(now: Duration) -> Double? {
        guard !lifecycle.isForeground else { return nil }
        return backgroundTime.remaining(now: now, budget: rules.taskBudget)
    }

    // MARK: Inputs

    /// A push for this handler arrived. `wallNowMilliseconds` is UNIX time for staleness.
    package mutating func push(_ push: AgentPush, now: Duration, wallNowMilliseconds: Int64) -> [HandlerAction] {
        if push.isVoIP { return voip(push, now: now, wallNowMilliseconds: wallNowMilliseconds) }
        return background(push, now: now)
    }

    /// The launched (or connecting) handler registered over IPC.
    package mutating func registered(now: Duration) -> [HandlerAction] {
        var actions: [HandlerAction] = []
        launchedAt = nil
        let entering = lifecycle == .notRunning || lifecycle == .launching || lifecycle == .suspended
        if entering {
            if lifecycle == .suspended { actions.append(.resume) }
            enterBackground(now: now)
        }
        backgroundTime.registered(now: now, enteredBackground: entering)
        let queued = waiting
        waiting = []
        for push in queued { actions += handOver(push, now: now) }
        actions += wakesRegistered(now: now)
        if let coalesced = coalescedReachability {
            coalescedReachability = nil
            actions.append(.notify(.reachability(coalesced)))
        }
        actions += flushCoalescedTime()
        return actions
    }

    /// The shell launched the process (at `now`: the launch deadline starts).
    package mutating func launched(now: Duration = .zero) {
        if lifecycle == .notRunning { lifecycle = .launching }
        launchedAt = now
    }

    /// The handler reported the call for `pushID` (or for no push: an outgoing or in-call report).
    package mutating func reportCall(pushID: String?, callID: String, now: Duration) -> [HandlerAction] {
        activeCalls.insert(callID)
        idleSince = nil
        if let wake = wakeReported(pushID: pushID, callID: callID) { return wake }
        guard let pushID, owedReports.removeValue(forKey: pushID) != nil else { return [] }
        settleOwed(pushID)
        return [.ack(pushID: pushID), .log("call reported", ["push-id": pushID, "call-id": callID])]
    }

    /// The call `callID` ended.
    package mutating func callEnded(callID: String, now: Duration) -> [HandlerAction] {
        activeCalls.remove(callID)
        markIdle(now: now)
        return []
    }

    /// A background push was completed.
    package mutating func complete(pushID: String, result: String, now: Duration) -> [HandlerAction] {
        guard openBackground.removeValue(forKey: pushID) != nil else { return [] }
        markIdle(now: now)
        return [.ack(pushID: pushID), .log("background push completed", ["push-id": pushID, "result": result])]
    }

    /// Every task of background-transfer `session` finished (or one needs the handler): like a background push,
    /// the handler is launched (reason `backgroundTransfer`) or resumed, and owes `transfersHandled` within the
    /// background deadline (after its launch deadline when it must be launched). A user-stopped handler is not
    /// woken; a foreground one owes nothing.
    package mutating func transferEvents(session: String, now: Duration) -> [HandlerAction] {
        switch lifecycle {
        case .notRunning:
            guard !userStopped else { return [] }
            lifecycle = .launching
            openTransferSessions[session] = now + rules.launchDeadline + rules.backgroundDeadline
            return [.launch(reason: "backgroundTransfer")]
        case .launching:
            openTransferSessions[session] = now + rules.launchDeadline + rules.backgroundDeadline
            return []
        case .suspended:
            enterBackground(now: now)
            idleSince = nil
            openTransferSessions[session] = now + rules.backgroundDeadline
            return [.resume, .notify(.lifecycle(.background))] + flushCoalesced()
        case .background:
            idleSince = nil
            openTransferSessions[session] = now + rules.backgroundDeadline
            return []
        case .active, .inactive:
            return []
        }
    }

    /// A background-fetch opportunity `id`: like a background push, the handler is launched (reason
    /// `backgroundFetch`) or resumed, and owes `fetchComplete` within the background deadline. A user-stopped
    /// handler is not woken (false: no fetch happens).
    package mutating func fetch(id: String, now: Duration) -> (started: Bool, actions: [HandlerAction]) {
        switch lifecycle {
        case .notRunning:
            guard !userStopped else { return (false, []) }
            lifecycle = .launching
            openFetches[id] = now + rules.launchDeadline + rules.backgroundDeadline
            return (true, [.launch(reason: "backgroundFetch")])
        case .launching:
            openFetches[id] = now + rules.launchDeadline + rules.backgroundDeadline
            return (true, [])
        case .suspended:
            enterBackground(now: now)
            idleSince = nil
            openFetches[id] = now + rules.backgroundDeadline
            return (true, [.resume, .notify(.lifecycle(.background))] + flushCoalesced())
        case .background, .active, .inactive:
            idleSince = nil
            openFetches[id] = now + rules.backgroundDeadline
            return (true, [])
        }
    }

    /// `fetchComplete(id)`.
    package mutating func fetchCompleted(id: String, now: Duration) -> [HandlerAction] {
        guard openFetches.removeValue(forKey: id) != nil else { return [] }
        markIdle(now: now)
        return []
    }

    /// `transfersHandled(session)`: the handler processed the session's events.
    package mutating func transfersHandled(session: String, now: Duration) -> [HandlerAction] {
        guard openTransferSessions.removeValue(forKey: session) != nil else { return [] }
        markIdle(now: now)
        return [.log("transfer events handled", ["session": session])]
    }

    /// A request the handler wrote before it was frozen, read by the agent after (the suspension timer fired in
    /// between; a frozen process writes nothing, so whatever is read while `suspended` predates the freeze): the
    /// handler was still busy, so it is thawed into the background and its idle time starts again, before the
    /// request is handled. Its background budget goes on from where it was, not from now.
    package mutating func requestReadWhileSuspended(now: Duration) -> [HandlerAction] {
        guard lifecycle == .suspended else { return [] }
        lifecycle = .background
        backgroundTime.continueBudget(now: now)
        idleSince = now
        return [.resume, .notify(.lifecycle(.background))] + flushCoalesced()
    }

    /// `beginTask(name)`: a token, or nil (`.invalid`) when the budget is spent.
    package mutating func beginTask(name: String, now: Duration) -> (id: Int?, actions: [HandlerAction]) {
        if let remaining = budgetRemaining(now: now), remaining <= 0 { return (nil, []) }
        let id = backgroundTime.begin(name: name)
        idleSince = nil
        return (id, [.notify(.taskBegun(id: id, name: name))])
    }

    /// `endTask(id)`.
    package mutating func endTask(id: Int, now: Duration) -> [HandlerAction] {
        backgroundTime.end(id: id)
        markIdle(now: now)
        return []
    }

    /// The handler declared `state` (`active`, `inactive`, `background`).
    package mutating func setState(_ state: HandlerLifecycle, now: Duration) -> [HandlerAction] {
        switch state {
        case .active, .inactive:
            lifecycle = state
            backgroundTime.enterForeground()
            idleSince = nil
            return [.notify(.lifecycle(state))]
        case .background:
            guard lifecycle.isForeground else { return [] }
            enterBackground(now: now)
            return [.notify(.lifecycle(.background))]
        default:
            return []
        }
    }

    /// The activation arbiter says whether the handler holds audio that keeps it running (see ``holdsAudio``).
    /// When that ends, the handler's idle time (before suspension) starts again.
    package mutating func setHoldsAudio(_ holds: Bool, now: Duration) {
        guard holds != holdsAudio else { return }
        holdsAudio = holds
        if holds {
            idleSince = nil
        } else if lifecycle == .background {
            markIdle(now: now)
        }
    }

    /// The gateway's reachability changed: told at once, or coalesced to one notice while suspended.
    package mutating func reachability(_ reachable: Bool) -> [HandlerAction] {
        switch lifecycle {
        case .suspended, .launching: coalescedReachability = reachable
        case .notRunning: break
        default: return [.notify(.reachability(reachable))]
        }
        return []
    }

    /// The process exited (by itself or killed). `exit`: how (``HandlerExit``; a crash unless the shell knows it
    /// was clean). After a clean exit, the VoIP pushes it owed a report and had not been handed again go to a new
    /// launch (HandlerMachine+Exit); `wallNowMilliseconds` (UNIX time) then judges their staleness at the hand-over.
    package mutating func exited(
        now: Duration, exit: HandlerExit = .crashed, wallNowMilliseconds: Int64? = nil
    ) -> [HandlerAction] {
        var actions: [HandlerAction] = []
        wakesUnansweredAtExit(now: now, into: &actions)
        let again = exit == .clean ? pushesToHandAgain() : []
        // Other pushes it owed an answer for are consumed: acknowledged so the gateway does not send them again.
        for id in owedReports.keys.sorted() where !again.contains(where: { $0.id == id }) {
            actions.append(.ack(pushID: id))
            settleOwed(id)
        }
        for id in openBackground.keys.sorted() { actions.append(.ack(pushID: id)) }
        owedReports = [:]
        owedPushes = [:]
        openBackground = [:]
        openTransferSessions = [:]
        openFetches = [:]
        owedWakes = [:]
        wakesWaiting = []
        keepAlive = nil
        backgroundTime.reset()
        activeCalls = []
        holdsAudio = false
        idleSince = nil
        coalescedReachability = nil
        coalescedTime = nil
        pendingWall = [:]
        launchedAt = nil
        lifecycle = .notRunning
        // Launched but died before registering: pushes go back to the gateway's care (not acked), but for those
        // already handed again: that launch was their second, and they are consumed.
        actions += consumeWaitingHandedAgain()
        waiting = []
        actions += handAgain(again, wallNowMilliseconds: wallNowMilliseconds)
        return actions
    }

    /// The user stopped the handler (force quit): held push dropped, no background launches.
    package mutating func userStop() -> [HandlerAction] {
        userStopped = true
        var actions: [HandlerAction] = []
        if let held {
            actions.append(.ack(pushID: held.id))
            self.held = nil
        }
        if lifecycle.isRunning { actions.append(.kill(reason: .userStopped)) }
        return actions
    }

    /// The user started the handler: launched if needed, the held push delivered at once.
    package mutating func userStart(now: Duration) -> [HandlerAction] {
        userStopped = false
        var actions: [HandlerAction] = []
        if let held {
            self.held = nil
            actions += deliverOrLaunch(held, now: now, reason: "user")
        } else if !lifecycle.isRunning {
            lifecycle = .launching
            actions.append(.launch(reason: "user"))
        }
        return actions
    }

    /// Registered again: strikes cleared, VoIP launches allowed.
    package mutating func reregister() -> [HandlerAction] {
        let had = strikeRecord.clear()
        return [.log("handler registered again, strikes cleared", ["strikes": String(had)])]
    }

    /// Timers: call at ``nextDeadline(now:)`` (or any time); enforces deadlines.
    package mutating func tick(now: Duration) -> [HandlerAction] {
        var actions: [HandlerAction] = []
        strikeRecord.expire(now: now, window: rules.strikeWindow)
        var killReason: String?
        if let until = socketBackoffUntil, until <= now {
            socketBackoffUntil = nil
            actions.append(.log("socket wake backoff ended: sockets watched again", [:]))
        }
        for (id, deadline) in owedReports.sorted(by: { $0.key < $1.key }) where deadline <= now {
            owedReports.removeValue(forKey: id)
            settleOwed(id)
            let blocks = strikeRecord.strike(now: now, limit: rules.strikeLimit)
            actions.append(.ack(pushID: id))
            actions.append(
                .log("no call reported for VoIP push: strike", ["push-id": id, "strikes": "\(strikes.count)"]))
            killReason = "no call reported within the deadline"
            if blocks {
                actions.append(.log("VoIP launches stopped until registered again", ["strikes": "\(strikes.count)"]))
            }
        }
        for (id, deadline) in openBackground.sorted(by: { $0.key < $1.key }) where deadline <= now {
            openBackground.removeValue(forKey: id)
            actions.append(.ack(pushID: id))
            actions.append(.log("background push not completed in time", ["push-id": id]))
            killReason = killReason ?? "background push not completed in time"
        }
        for (id, deadline) in openFetches.sorted(by: { $0.key < $1.key }) where deadline <= now {
            openFetches.removeValue(forKey: id)
            actions.append(.log("background fetch not completed in time", ["fetch-id": id]))
            killReason = killReason ?? "background fetch not completed in time"
        }
        for (session, deadline) in openTransferSessions.sorted(by: { $0.key < $1.key }) where deadline <= now {
            openTransferSessions.removeValue(forKey: session)
            actions.append(.log("transfer events not handled in time", ["session": session]))
            killReason = killReason ?? "transfer events not handled in time"
        }
        if let reason = expireWakes(now: now, into: &actions) { killReason = killReason ?? reason }
        if !lifecycle.isForeground {
            let (expiring, overrun) = backgroundTime.due(now: now, rules: rules)
            actions += expiring.map { .notify($0) }
            if let names = overrun {
                actions.append(.log("background task never ended: terminating", ["tasks": names]))
                killReason = killReason ?? "background task never ended: \(names)"
            }
        }
        if lifecycle == .launching, let at = launchedAt, now - at >= rules.launchDeadline {
            if waiting.contains(where: \.isVoIP) || !wakesWaiting.isEmpty {
                _ = strikeRecord.strike(now: now, limit: rules.strikeLimit)
            }
            if !wakesWaiting.isEmpty {
                // Struck here: its exit after the kill is no second strike, but its sockets wait the backoff.
                wakesWaiting = []
                socketBackoffUntil = now + rules.socketWakeBackoff
            }
            actions.append(.log("handler did not register in time", ["strikes": "\(strikes.count)"]))
            killReason = killReason ?? "did not register within the launch deadline"
            launchedAt = nil
        }
        if let killReason, lifecycle.isRunning {
            actions.append(.kill(reason: TerminationReason(rawValue: killReason)))
            return actions
        }
        endKeepAliveIfDue(now: now, into: &actions)
        if let held, refilled(now: now) >= 1, !userStopped {
            consumeToken(now: now)
            self.held = nil
            actions += deliverOrLaunch(held, now: now, reason: "backgroundPush")
        }
        if lifecycle == .background, canSuspend, let idle = idleSince, now - idle >= rules.suspendAfter {
            lifecycle = .suspended
            actions.append(.suspend)
        }
        return actions
    }

    /// When ``tick(now:)`` must next run, or nil when no timer is needed.
    package func nextDeadline(now: Duration) -> Duration? {
        var candidates: [Duration] =
            Array(owedReports.values) + Array(openBackground.values) + Array(openTransferSessions.values)
            + Array(openFetches.values) + Array(owedWakes.values)
        if let keepAlive { candidates.append(keepAlive.deadline) }
        if !lifecycle.isForeground, let next = backgroundTime.nextDeadline(rules: rules) { candidates.append(next) }
        if held != nil, !userStopped {
            let missing = 1 - refilled(now: now)
            candidates.append(missing <= 0 ? now : now + .seconds(missing * 3600 / max(rules.backgroundPerHour, 1e-9)))
        }
        if lifecycle == .background, canSuspend, let idle = idleSince { candidates.append(idle + rules.suspendAfter) }
        if lifecycle == .launching, let at = launchedAt { candidates.append(at + rules.launchDeadline) }
        if let first = strikes.first { candidates.append(first + rules.strikeWindow) }
        if let socketBackoffUntil { candidates.append(socketBackoffUntil) }
        return candidates.min()
    }

    // MARK: Rules

    var canSuspend: Bool {
        owedReports.isEmpty && openBackground.isEmpty && openTransferSessions.isEmpty && openFetches.isEmpty
            && tasks.isEmpty && owedWakes.isEmpty && wakesWaiting.isEmpty && keepAlive == nil
            && activeCalls.isEmpty && waiting.isEmpty
            && !holdsAudio
    }

    private mutating func voip(_ push: AgentPush, now: Duration, wallNowMilliseconds: Int64) -> [HandlerAction] {
        if voipBlocked && !lifecycle.isRunning {
            return [
                .ack(pushID: push.id),
                .log("VoIP push dropped: launches stopped after strikes", ["push-id": push.id]),
            ]
        }
        return deliverOrLaunch(push, now: now, reason: "voipPush", wallNowMilliseconds: wallNowMilliseconds)
    }

    private mutating func background(_ push: AgentPush, now: Duration) -> [HandlerAction] {
        if userStopped && !lifecycle.isRunning {
            var actions: [HandlerAction] = []
            if let old = held { actions.append(.ack(pushID: old.id)) }
            held = push
            actions.append(.log("background push held: handler stopped by the user", ["push-id": push.id]))
            return actions
        }
        guard refilled(now: now) >= 1 else {
            var actions: [HandlerAction] = []
            if let old = held {
                actions.append(.ack(pushID: old.id))
                actions.append(.log("held background push replaced by a newer one", ["push-id": old.id]))
            }
            held = push
            actions.append(.log("background push throttled: held", ["push-id": push.id]))
            return actions
        }
        consumeToken(now: now)
        return deliverOrLaunch(push, now: now, reason: "backgroundPush")
    }

    var pendingWall: [String: Int64] = [:]

    private mutating func deliverOrLaunch(
        _ push: AgentPush, now: Duration, reason: String, wallNowMilliseconds: Int64? = nil
    ) -> [HandlerAction] {
        if let wall = wallNowMilliseconds { pendingWall[push.id] = wall }
        switch lifecycle {
        case .notRunning:
            lifecycle = .launching
            waiting.append(push)
            return [.launch(reason: reason)]
        case .launching:
            waiting.append(push)
            return []
        case .suspended:
            enterBackground(now: now)
            return [.resume, .notify(.lifecycle(.background))] + handOver(push, now: now) + flushCoalesced()
        default:
            return handOver(push, now: now)
        }
    }

    mutating func flushCoalesced() -> [HandlerAction] {
        guard let value = coalescedReachability else { return flushCoalescedTime() }
        coalescedReachability = nil
        return [.notify(.reachability(value))] + flushCoalescedTime()
    }

    private mutating func handOver(_ push: AgentPush, now: Duration) -> [HandlerAction] {
        idleSince = nil
        if push.isVoIP {
            let wall = pendingWall.removeValue(forKey: push.id) ?? push.receivedAt
            let stale =
                Self.isExpired(push, wallMilliseconds: wall)
                || Self.ageSeconds(push, wallMilliseconds: wall) >= seconds(rules.staleAfter)
            let mustReport = !(lifecycle.isForeground || !activeCalls.isEmpty || stale)
            if mustReport {
                owedReports[push.id] = now + rules.voipDeadline
                owedPushes[push.id] = push
                return [.deliver(push, mustReport: true, deadlineSeconds: seconds(rules.voipDeadline))]
            }
            var why = "foreground"
            if !activeCalls.isEmpty { why = "in a call" }
            if stale { why = "stale" }
            settleOwed(push.id)  // a push handed again needs no report now: settled
            markIdle(now: now)
            return [
                .deliver(push, mustReport: false, deadlineSeconds: 0), .ack(pushID: push.id),
                .log("VoIP push needs no report", ["push-id": push.id, "why": why]),
            ]
        }
        if push.pushType == "background" {
            openBackground[push.id] = now + rules.backgroundDeadline
            return [.deliver(push, mustReport: false, deadlineSeconds: seconds(rules.backgroundDeadline))]
        }
        // Other types (alert…): handed over, acknowledged on hand-over.
        markIdle(now: now)
        return [.deliver(push, mustReport: false, deadlineSeconds: 0), .ack(pushID: push.id)]
    }

    /// Whether `push` expired (`apns-expiration`, UNIX seconds; 0 = none) at `wall` (UNIX milliseconds). The
    /// gateway's numbers are not trusted to stay in range: an expiration too large to be milliseconds never
    /// passes, a negative one always has.
    static func isExpired(_ push: AgentPush, wallMilliseconds wall: Int64) -> Bool {
        guard push.expiration != 0 else { return false }
        let (milliseconds, overflow) = push.expiration.multipliedReportingOverflow(by: 1000)
        return overflow ? push.expiration < 0 : milliseconds < wall
    }

    /// Seconds from the gateway's receipt of `push` to `wall` (UNIX milliseconds), without overflow: a receipt
    /// time so far in the past that the difference overflows is infinitely old.
    static func ageSeconds(_ push: AgentPush, wallMilliseconds wall: Int64) -> Double {
        let (age, overflow) = wall.subtractingReportingOverflow(push.receivedAt)
        guard !overflow else { return push.receivedAt < 0 ? .infinity : -.infinity }
        return Double(age) / 1000
    }

    mutating func enterBackground(now: Duration) {
        lifecycle = .background
        backgroundTime.enterBackground(now: now)
        idleSince = now
    }

    mutating func markIdle(now: Duration) {
        if canSuspend { idleSince = now }
    }

    func refilled(now: Duration) -> Double {
        bucket.available(now: now, burst: rules.backgroundBurst, perHour: rules.backgroundPerHour)
    }

    private mutating func consumeToken(now: Duration) {
        bucket.take(now: now, burst: rules.backgroundBurst, perHour: rules.backgroundPerHour)
    }

    func seconds(_ duration: Duration) -> Double { duration.inSeconds }
}
