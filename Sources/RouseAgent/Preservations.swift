import RouseState

/// State preservation's state: each handler's preservation flags (reset at each launch), who waits for a handler's
/// `preserve` answer, and what was stored and answered. Owned by the ``Agent`` and touched only on its isolation;
/// the agent's steps in `Agent+Preservation.swift` read and change it through the methods here.
final class Preservations {
    /// One handler's flags (a plain value; reset at each launch).
    struct Flags {
        /// The handler opted in (`register` with `preserves`, or it preserved).
        var optedIn = false
        /// `beginLaunch` ran for this process (not again when a re-attached handler reconnects).
        var launchBegun = false
        /// The restoration on offer, until the handler answers.
        var offer: Restoration?
        /// The next `.suspend`/`.kill` runs at once: the handler was already asked to preserve.
        var asked = false
        /// The process was launched by an earlier agent and re-attached.
        var adopted = false
    }

    private struct Waiter {
        let handler: String
        let continuation: CheckedContinuation<Void, Never>
    }

    private var flags: [String: Flags] = [:]
    /// Handlers waiting to answer a `preserveRequest`, by waiter id.
    private var waiters: [Int: Waiter] = [:]
    private var nextWaiter = 1
    /// Handler archives stored (for tests and the benchmark).
    private(set) var stored = 0
    /// Restoration answers recorded (for tests and the benchmark).
    private(set) var answered = 0

    /// No handler has preserved anything yet.
    init() {}

    /// `name`'s flags.
    func flags(of name: String) -> Flags { flags[name] ?? Flags() }

    /// A new process of `name` (launched, exited, or its handler removed): its flags start again.
    func reset(_ name: String) { flags[name] = nil }

    /// `name`'s process was launched by an earlier agent and re-attached: its launch has begun.
    func adopted(_ name: String) {
        flags[name, default: Flags()].adopted = true
        flags[name, default: Flags()].launchBegun = true
    }

    /// `name` opted in (or not) at its registration; returns whether this registration begins its launch.
    func registered(_ name: String, optIn: Bool) -> Bool {
        var entry = flags(of: name)
        let beginning = !entry.launchBegun
        entry.optedIn = optIn
        entry.launchBegun = true
        flags[name] = entry
        return beginning
    }

    /// `name` preserved: it counts as opted in.
    func optedIn(_ name: String) { flags[name, default: Flags()].optedIn = true }

    /// `offer` waits for `name`'s answer.
    func offer(_ offer: Restoration, to name: String) { flags[name, default: Flags()].offer = offer }

    /// The restoration on offer to `name`, no longer on offer.
    func takeOffer(_ name: String) -> Restoration? {
        guard let offer = flags[name]?.offer else { return nil }
        flags[name]?.offer = nil
        return offer
    }

    /// Whether `name`'s next `.suspend`/`.kill` runs at once (it was asked to preserve already).
    func setAsked(_ name: String, _ asked: Bool) { flags[name, default: Flags()].asked = asked }

    /// A handler archive was stored.
    func countStored() { stored += 1 }

    /// A restoration answer was recorded.
    func countAnswered() { answered += 1 }

    // MARK: Waiting for answers

    /// `continuation` waits for `name`'s `preserve` answer; returns the wait's id.
    func wait(for name: String, _ continuation: CheckedContinuation<Void, Never>) -> Int {
        let id = nextWaiter
        nextWaiter += 1
        waiters[id] = Waiter(handler: name, continuation: continuation)
        return id
    }

    /// Wait `id` timed out: released; returns the handler it waited for (nil: it was released already).
    func expire(_ id: Int) -> String? {
        guard let waiter = waiters.removeValue(forKey: id) else { return nil }
        waiter.continuation.resume()
        return waiter.handler
    }

    /// Releases whoever waits for `name`'s answer (it answered, or it is gone).
    func wake(_ name: String) {
        for (id, waiter) in waiters where waiter.handler == name {
            waiters.removeValue(forKey: id)
            waiter.continuation.resume()
        }
    }
}
