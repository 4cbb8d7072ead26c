import RouseActivation

/// One side of a matrix case: a session as a handler asks for it (or the call path activates it).
struct Party: CustomStringConvertible, Sendable {
    var category: SessionCategory
    var mode: SessionMode
    var options: SessionOptions
    /// Nil: the call path (`callStarted`) with its default configuration.
    var priority: ActivationPriority?
    var foreground: Bool
    var acceptsDelay: Bool

    var viaCallPath: Bool { priority == nil }

    var description: String {
        let role = priority?.rawValue ?? "call-path"
        let names = options.members.map(\.rawValue).joined(separator: "+")
        return "\(role) \(category.rawValue)/\(mode.rawValue)[\(names)] \(foreground ? "fg" : "bg")"
            + (acceptsDelay ? " delay-ok" : "")
    }

    static let callPath = Party(
        category: .playAndRecord, mode: .voiceChat, options: [], priority: nil, foreground: true, acceptsDelay: false)

    /// Every valid category × mode (default, spokenAudio) × option subset, from the tables of B1–B3 as
    /// transcribed in `ConfigurationTests` (not from the implementation).
    static let validShapes: [(SessionCategory, SessionMode, SessionOptions)] = SessionCategory.allCases.flatMap {
        category in
        [SessionMode.default, .spokenAudio].flatMap { mode in
            ConfigurationTests.optionSubsets.compactMap { options in
                let ok =
                    ConfigurationTests.allowedOptions[category, default: []].isSuperset(of: options)
                    && ConfigurationTests.allowedModes[mode, default: []].contains(category)
                return ok ? (category, mode, options) : nil
            }
        }
    }

    static func all(priorities: [ActivationPriority], delays: [Bool]) -> [Party] {
        var parties: [Party] = []
        for (category, mode, options) in validShapes {
            for priority in priorities {
                for foreground in [true, false] {
                    for acceptsDelay in delays {
                        parties.append(
                            Party(
                                category: category, mode: mode, options: options, priority: priority,
                                foreground: foreground, acceptsDelay: acceptsDelay))
                    }
                }
            }
        }
        return parties + [callPath]
    }
}

/// The expected outcome of a matrix case, written from the rules table of agent.md B9 (and the
/// documented refinements in docs/activations.md), independently of the arbiter's code.
enum PreemptionModel {
    enum Who { case existing, new }
    enum Effect { case none, duck, interrupt }
    enum Outcome: Equatable { case granted, delayed, denied(DenialReason) }

    /// B3: ambient implies mixing, and so does any of the three options; ambient priority always mixes;
    /// the call path never does.
    static func mixable(_ party: Party) -> Bool {
        guard let priority = party.priority else { return false }
        return priority == .ambient || party.category == .ambient || !party.options.isEmpty
    }

    static func priority(_ party: Party) -> ActivationPriority { party.priority ?? .call }

    /// The outcome of the new request N with E active.
    static func outcome(existing e: Party, new n: Party) -> Outcome {
        if n.viaCallPath {
            // Only a non-mixable alert outranks a call: the call waits.
            return !mixable(e) && priority(e) > .call ? .delayed : .granted
        }
        if n.priority == .call { return .denied(.callPathRequired) }
        if !mixable(n) && !n.foreground { return .denied(.cannotInterruptOthers) }
        if !mixable(n) && !mixable(e) && priority(e) > priority(n) {
            return n.acceptsDelay && e.viaCallPath ? .delayed : .denied(.insufficientPriority)
        }
        return .granted
    }

    /// The table row of N against the column of E.
    static func effect(of n: Party, on e: Party) -> Effect {
        if n.viaCallPath { return priority(e) <= .call ? .interrupt : .none }
        if priority(e) > priority(n) { return .none }  // never preempted by a lower priority
        if !mixable(n) {
            if !mixable(e) { return .interrupt }
            // E mixable: keeps playing if its role policy is "mix" (ambient, media, notification).
            return [.ambient, .media, .notification].contains(priority(e)) ? .none : .interrupt
        }
        if n.options.contains(.interruptSpokenAudioAndMixWithOthers) && e.mode == .spokenAudio { return .interrupt }
        if n.options.contains(.duckOthers) {
            return mixable(e) ? (priority(e) < priority(n) ? .duck : .none) : .duck
        }
        return .none
    }

    struct Expectation {
        var outcome: Outcome
        var first: [(Who, ActivationMessage)]
        var firstHooks: [(HookEvent.Kind, Who)]
        /// After N deactivates (or its call ends), with or without notify.
        var released: (Bool) -> ([(Who, ActivationMessage)], [(HookEvent.Kind, Who)])
    }

    static func expect(existing e: Party, new n: Party) -> Expectation {
        let outcome = outcome(existing: e, new: n)
        guard outcome == .granted else {
            let message: ActivationMessage = if case .denied(let reason) = outcome { .denied(reason) } else { .delayed }
            return Expectation(outcome: outcome, first: [(.new, message)], firstHooks: [], released: { _ in ([], []) })
        }
        let onE = effect(of: n, on: e)
        // E ducks N when N stays un-interrupted under E's duckOthers (the reverse row of the table).
        let eDucksN = onE != .interrupt && effect(of: e, on: n) == .duck
        var first: [(Who, ActivationMessage)] = [(.new, n.viaCallPath ? .callActivated : .granted)]
        if onE == .interrupt { first.append((.existing, .interruptionBegan(.preempted))) }
        if onE == .duck { first.append((.existing, .duckBegan)) }
        if eDucksN { first.append((.new, .duckBegan)) }
        var firstHooks: [(HookEvent.Kind, Who)] = []
        if onE == .interrupt { firstHooks.append((.revoke, .existing)) }
        firstHooks.append((.grant, .new))
        let released = { (notify: Bool) -> ([(Who, ActivationMessage)], [(HookEvent.Kind, Who)]) in
            var sent: [(Who, ActivationMessage)] = []
            if eDucksN { sent.append((.new, .duckEnded)) }
            if n.viaCallPath { sent.append((.new, .callDeactivated)) }
            var hooks: [(HookEvent.Kind, Who)] = [(.revoke, .new)]
            switch onE {
            case .interrupt:
                sent.append((.existing, .interruptionEnded(shouldResume: notify)))
                if notify {
                    hooks.append((.grant, .existing))
                } else if e.viaCallPath {
                    sent.append((.existing, .callDeactivated))
                }
            case .duck:
                sent.append((.existing, .duckEnded))
            case .none:
                break
            }
            return (sent, hooks)
        }
        return Expectation(outcome: outcome, first: first, firstHooks: firstHooks, released: released)
    }
}
