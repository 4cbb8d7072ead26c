import RouseClock

/// The socket-woken half of iOS's VoIP model in a handler's rules (docs/voip-sockets.md): data on a watched socket
/// wakes the handler like a VoIP push (same deadline, same strikes), and keep-alives wake it with a short budget.
extension HandlerMachine {
    /// Data arrived on the handler's watched sockets (wake `id`): launched (reason `voipSocket`) or resumed. Unless it
    /// is in the foreground or in a call, it owes `reportCall` (`pushID`: `id`) or `voipWakeHandled` within the VoIP
    /// deadline (from its registration when launched); missing it is a strike, as for a push. Nil: dropped, because
    /// its VoIP launches are stopped after strikes.
    package mutating func socketWake(id: String, now: Duration) -> [HandlerAction]? {
        switch lifecycle {
        case .notRunning:
            guard !voipBlocked else { return nil }
            lifecycle = .launching
            wakesWaiting.append(id)
            return [.launch(reason: "voipSocket")]
        case .launching:
            wakesWaiting.append(id)
            return []
        case .suspended:
            enterBackground(now: now)
            return [.resume, .notify(.lifecycle(.background))] + flushCoalesced() + owe(id, now: now)
        case .background, .active, .inactive:
            return owe(id, now: now)
        }
    }

    /// `voipWakeHandled(id)`: the wake carried no call; false when no such wake is owed.
    package mutating func wakeHandled(id: String, now: Duration) -> Bool {
        guard owedWakes.removeValue(forKey: id) != nil else { return false }
        markIdle(now: now)
        return true
    }

    /// A keep-alive (`id`) is due: the handler is launched (reason `keepAlive`) or resumed and gets the keep-alive
    /// budget; when it ends (or at `keepAliveDone`) the handler is suspended again. A foreground handler is told
    /// without a budget; a user-stopped one is not woken (empty).
    package mutating func keepAliveDue(id: String, now: Duration) -> [HandlerAction] {
        guard !userStopped else { return [] }
        let budget = rules.keepAliveBudget
        switch lifecycle {
        case .notRunning:
            lifecycle = .launching
            keepAlive = (id, now + rules.launchDeadline + budget)
            return [.launch(reason: "keepAlive")]
        case .launching:
            if keepAlive == nil { keepAlive = (id, now + rules.launchDeadline + budget) }
            return []
        case .suspended:
            enterBackground(now: now)
            idleSince = nil
            keepAlive = (id, now + budget)
            return [.resume, .notify(.lifecycle(.background))] + flushCoalesced()
                + [.notify(.keepAlive(id: id, seconds: budget.inSeconds))]
        case .background:
            idleSince = nil
            keepAlive = (id, now + budget)
            return [.notify(.keepAlive(id: id, seconds: budget.inSeconds))]
        case .active, .inactive:
            return [.notify(.keepAlive(id: id, seconds: 0))]
        }
    }

    /// `keepAliveDone(id)`: the handler may be suspended (after the usual idle time); false when it is not the
    /// keep-alive under way.
    package mutating func keepAliveDone(id: String, now: Duration) -> Bool {
        guard keepAlive?.id == id else { return false }
        keepAlive = nil
        markIdle(now: now)
        return true
    }

    // MARK: Hooks of the machine's own inputs

    /// `reportCall` answering an owed wake: its `pushID` is the wake's id, or none (a call reported answers every
    /// owed wake). Nil when it answers no wake.
    mutating func wakeReported(pushID: String?, callID: String) -> [HandlerAction]? {
        if let pushID {
            guard owedWakes.removeValue(forKey: pushID) != nil else { return nil }
            return [.log("call reported for socket wake", ["wake-id": pushID, "call-id": callID])]
        }
        guard !owedWakes.isEmpty else { return nil }
        let ids = owedWakes.keys.sorted().joined(separator: ",")
        owedWakes = [:]
        return [.log("call reported for socket wake", ["wake-id": ids, "call-id": callID])]
    }

    /// At registration: the wakes that launched the handler are told (and owed from now), and the keep-alive.
    mutating func wakesRegistered(now: Duration) -> [HandlerAction] {
        var actions: [HandlerAction] = []
        let waiting = wakesWaiting
        wakesWaiting = []
        for id in waiting { actions += owe(id, now: now) }
        if let keepAlive {
            let left = max(.zero, keepAlive.deadline - now)
            self.keepAlive = (keepAlive.id, now + min(left, rules.keepAliveBudget))
            actions.append(.notify(.keepAlive(id: keepAlive.id, seconds: min(left, rules.keepAliveBudget).inSeconds)))
        }
        return actions
    }

    /// Owed wakes whose deadline passed: a strike each (VoIP launches stop at the limit); the kill reason, if any.
    mutating func expireWakes(now: Duration, into actions: inout [HandlerAction]) -> String? {
        var reason: String?
        for (id, deadline) in owedWakes.sorted(by: { $0.key < $1.key }) where deadline <= now {
            owedWakes.removeValue(forKey: id)
            let blocks = strikeRecord.strike(now: now, limit: rules.strikeLimit)
            actions.append(
                .log("no call reported for socket wake: strike", ["wake-id": id, "strikes": "\(strikes.count)"]))
            reason = "no call reported within the deadline of a socket wake"
            if blocks {
                actions.append(.log("VoIP launches stopped until registered again", ["strikes": "\(strikes.count)"]))
            }
        }
        return reason
    }

    /// At exit: socket wakes it was launched for or owed an answer are a strike (as at the launch or report
    /// deadline; VoIP launches stop at the limit), and its sockets, whose data is likely still unread, stay unarmed
    /// for ``HandlerRules/socketWakeBackoff``.
    mutating func wakesUnansweredAtExit(now: Duration, into actions: inout [HandlerAction]) {
        guard !wakesWaiting.isEmpty || !owedWakes.isEmpty else { return }
        strikeRecord.expire(now: now, window: rules.strikeWindow)
        let blocks = strikeRecord.strike(now: now, limit: rules.strikeLimit)
        socketBackoffUntil = now + rules.socketWakeBackoff
        actions.append(.log("exited with socket wakes unanswered: strike", ["strikes": "\(strikes.count)"]))
        if blocks {
            actions.append(.log("VoIP launches stopped until registered again", ["strikes": "\(strikes.count)"]))
        }
    }

    /// The keep-alive budget ended: the handler is suspended at once when nothing else keeps it awake.
    mutating func endKeepAliveIfDue(now: Duration, into actions: inout [HandlerAction]) {
        guard let keepAlive, keepAlive.deadline <= now else { return }
        self.keepAlive = nil
        actions.append(.log("keep-alive budget ended", ["keep-alive-id": keepAlive.id]))
        guard lifecycle == .background, canSuspend else { return }
        idleSince = now - rules.suspendAfter
    }

    private mutating func owe(_ id: String, now: Duration) -> [HandlerAction] {
        idleSince = nil
        let mustReport = !lifecycle.isForeground && activeCalls.isEmpty
        guard mustReport else {
            markIdle(now: now)
            return [.notify(.voipSocketWake(wake: id, mustReport: false, seconds: 0))]
        }
        owedWakes[id] = now + rules.voipDeadline
        return [.notify(.voipSocketWake(wake: id, mustReport: true, seconds: rules.voipDeadline.inSeconds))]
    }
}
