/// The effects of one arbiter step under construction, with the sessions that were playing before it
/// (to derive the hook's grants and revokes).
struct Step {
    var effects: [ActivationEffect] = []
    let playingBefore: [ActivationArbiter.Entry]

    init(_ arbiter: ActivationArbiter) {
        playingBefore = arbiter.entries.filter(\.isActive)
    }

    mutating func send(_ session: SessionID, _ message: ActivationMessage) {
        effects.append(.notify(session, message))
    }
}

extension ActivationArbiter {
    /// Makes the entry at `index` active, tells its holder, and applies its preemption to the others.
    mutating func grant(at index: Int, now: Double, _ step: inout Step) {
        entries[index].status = .active
        entries[index].ducked = false
        entries[index].since = now
        step.send(entries[index].id, entries[index].isCall ? .callActivated : .granted)
        preempt(by: index, &step)
    }

    /// Interrupts every held session that the active entry at `index` preempts; an already interrupted one
    /// counts it as one more blocker (no second `interruptionBegan`).
    mutating func preempt(by index: Int, _ step: inout Step) {
        let new = entries[index]
        for other in entries.indices where other != index {
            guard Self.preemption(by: new, of: entries[other]) == .interrupt else { continue }
            switch entries[other].status {
            case .active:
                closeDuck(at: other, &step)
                entries[other].status = .interrupted(.preempted, blockers: [new.id])
                step.send(entries[other].id, .interruptionBegan(.preempted))
            case .interrupted(let reason, var blockers):
                if !blockers.contains(new.id) {
                    blockers.append(new.id)
                    entries[other].status = .interrupted(reason, blockers: blockers)
                }
            case .suspended, .delayed:
                break
            }
        }
    }

    mutating func closeDuck(at index: Int, _ step: inout Step) {
        if entries[index].ducked {
            entries[index].ducked = false
            step.send(entries[index].id, .duckEnded)
        }
    }

    /// Removes a session. A live holder gets the ends of its open begins and, for an activated call,
    /// `callDeactivated`; then the sessions it interrupted are released.
    mutating func release(_ id: SessionID, notify: Bool, holderAlive: Bool, _ step: inout Step) {
        guard let index = index(of: id) else { return }
        if holderAlive {
            closeDuck(at: index, &step)
            switch entries[index].status {
            case .interrupted, .suspended: step.send(id, .interruptionEnded(shouldResume: false))
            case .active, .delayed: break
            }
            if entries[index].isCall && entries[index].status != .delayed {
                step.send(id, .callDeactivated)
            }
        }
        entries.remove(at: index)
        releaseVictims(of: id, notify: notify, &step)
    }

    /// The sessions `id` interrupted lose it as a blocker. Without notify each ends at once
    /// (`shouldResume: false`, cascading to its own victims); with notify each resumes when no blocker is
    /// left, and a resumed session preempts like a new grant.
    mutating func releaseVictims(of id: SessionID, notify: Bool, _ step: inout Step) {
        var ended: [SessionID] = []
        var resumable: [SessionID] = []
        for index in entries.indices {
            guard case .interrupted(let reason, var blockers) = entries[index].status,
                let position = blockers.firstIndex(of: id)
            else { continue }
            blockers.remove(at: position)
            entries[index].status = .interrupted(reason, blockers: blockers)
            if !notify {
                ended.append(entries[index].id)
            } else if blockers.isEmpty {
                resumable.append(entries[index].id)
            }
        }
        for victim in ended {
            release(victim, notify: false, holderAlive: true, &step)
        }
        for victim in resumable {
            // An earlier resume in this loop may have preempted it again.
            guard let index = index(of: victim), case .interrupted(_, let blockers) = entries[index].status,
                blockers.isEmpty
            else { continue }
            entries[index].status = .active
            step.send(victim, .interruptionEnded(shouldResume: true))
            preempt(by: index, &step)
        }
    }

    /// Leaves suspension: sessions held through it end (`shouldResume: false`).
    mutating func thaw(_ handler: HandlerID, to activity: HandlerActivity, _ step: inout Step) {
        let wasSuspended = holders[handler]?.state == .suspended
        holders[handler, default: Holder()].state = activity.state
        guard wasSuspended else { return }
        let held = entries.filter {
            guard $0.id.handler == handler, case .suspended = $0.status else { return false }
            return true
        }
        for entry in held {
            release(entry.id, notify: false, holderAlive: true, &step)
        }
    }

    /// Ends a step: grants delayed requests that nothing blocks any more (in request order), brings every
    /// active session's duck in line with the active duckers, then derives the hook events.
    mutating func finish(_ step: inout Step, now: Double) -> [ActivationEffect] {
        while let index = entries.indices.first(where: {
            entries[$0].status == .delayed && admission(of: entries[$0]) == .grant
        }) {
            grant(at: index, now: now, &step)
        }
        // Only a mixable session with duckOthers can duck: look at those alone (usually none or one).
        let duckers = entries.filter { $0.isActive && $0.configuration.options.contains(.duckOthers) }
        for index in entries.indices where entries[index].isActive {
            let entry = entries[index]
            let ducked = duckers.contains { Self.preemption(by: $0, of: entry) == .duck }
            if ducked != entry.ducked {
                entries[index].ducked = ducked
                step.send(entry.id, ducked ? .duckBegan : .duckEnded)
            }
        }
        appendHookEvents(&step)
        return step.effects
    }

    private func appendHookEvents(_ step: inout Step) {
        let playing = entries.filter(\.isActive)
        let before = Set(step.playingBefore.map(\.id))
        let after = Set(playing.map(\.id))
        let activeRoles = Set(playing.map(\.priority)).sorted()
        let duckingRoles = Set(playing.filter { $0.configuration.options.contains(.duckOthers) }.map(\.priority))
            .sorted()
        func event(_ kind: HookEvent.Kind, _ entry: Entry) -> ActivationEffect {
            .hook(
                HookEvent(
                    kind: kind, session: entry.id, role: entry.priority, configuration: entry.configuration,
                    activeRoles: activeRoles, duckingRoles: duckingRoles))
        }
        for entry in step.playingBefore where !after.contains(entry.id) {
            step.effects.append(event(.revoke, entry))
        }
        for entry in playing where !before.contains(entry.id) {
            step.effects.append(event(.grant, entry))
        }
    }
}
