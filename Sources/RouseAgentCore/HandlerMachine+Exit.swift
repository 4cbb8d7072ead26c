/// How a handler's process ended, as the exit rules see it (docs/handler-protocol.md, "A push unanswered at exit").
package enum HandlerExit: Sendable, Equatable {
    /// Exit status 0, the agent had not asked it to stop, and the agent is not stopping: the handler ended by itself
    /// and may never have read what was sent to it last (a push that arrived while it was leaving).
    case clean
    /// A signal, a non-zero status, a stop the agent asked for (the user's, a rule's, memory pressure's, the agent's
    /// own), or an end whose status is not known (a handler the agent did not launch: its connection closed).
    case crashed
}

/// A VoIP push unanswered at a clean exit (the SIP test's lost call: a push that arrived while the handler was ending
/// its loop sat unread in its socket when it exited). iOS holds a PushKit push until the app's delegate has it; the
/// agent cannot tell a push read from one still in the socket, so a push owed a report whose handler exited cleanly
/// is handed once more, to a new launch, and acknowledged only when that launch answers it or the rules consume it.
/// At most once per push: a second unanswered exit, or a relaunch that never registers, consumes it as before. A
/// crash consumes it at once (no relaunch: a crash during restoration must not be followed by another launch), and
/// a user-stopped or VoIP-blocked handler is not launched for it.
extension HandlerMachine {
    /// The owed VoIP pushes a clean exit hands to a new launch: those not handed again before, unless the user
    /// stopped the handler or its VoIP launches are stopped after strikes.
    mutating func pushesToHandAgain() -> [AgentPush] {
        guard !userStopped, !voipBlocked else { return [] }
        return owedReports.keys.sorted().compactMap { id in
            handedAgain.contains(id) ? nil : owedPushes[id]
        }
    }

    /// A push's report is settled (answered, expired or consumed): nothing more is kept of it.
    mutating func settleOwed(_ id: String) {
        owedPushes.removeValue(forKey: id)
        handedAgain.remove(id)
    }

    /// Pushes handed again that were waiting for a launch that ended before registering: consumed (acknowledged).
    mutating func consumeWaitingHandedAgain() -> [HandlerAction] {
        var actions: [HandlerAction] = []
        for push in waiting where handedAgain.contains(push.id) {
            handedAgain.remove(push.id)
            actions.append(.ack(pushID: push.id))
            actions.append(.log("VoIP push handed again: its launch ended before registering", ["push-id": push.id]))
        }
        return actions
    }

    /// `pushes` wait for a new launch (reason `voipPush`: its launch deadline, then its report deadline from the
    /// registration, as for any VoIP launch); staleness is judged at the exit's wall time.
    mutating func handAgain(_ pushes: [AgentPush], wallNowMilliseconds: Int64?) -> [HandlerAction] {
        guard !pushes.isEmpty else { return [] }
        var actions: [HandlerAction] = []
        for push in pushes {
            handedAgain.insert(push.id)
            if let wall = wallNowMilliseconds { pendingWall[push.id] = wall }
            waiting.append(push)
            actions.append(.log("exited cleanly with a VoIP push unanswered: handed again", ["push-id": push.id]))
        }
        lifecycle = .launching
        actions.append(.launch(reason: "voipPush"))
        return actions
    }
}
