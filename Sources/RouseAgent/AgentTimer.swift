import RouseClock

/// One timer of the agent on its clock: sleeps until the earliest deadline it was armed for, then runs what it was
/// armed with (on the agent). Owned by one part and touched only on the agent's isolation.
///
/// An armed timer due no later than a new deadline is kept rather than re-created: a cancelled sleep would still wake
/// the process at its deadline, so re-arming at every input would leave one wake-up behind each time. A timer that
/// fires before anything is due does nothing and is armed again by its owner.
///
/// A firing reaches the agent after a hop (the sleeping task awaits the actor), so it can arrive after the owner
/// cancelled or re-armed the timer. Each arming has a generation, handed to `fire`; the owner's step starts with
/// `guard timer.fired(generation) else { return }`, which turns a stale firing into nothing and leaves the current
/// arming alone.
package final class AgentTimer {
    private let clock: any RouseClock
    private var task: Task<Void, Never>?
    private var generation: UInt64 = 0
    /// When the armed timer fires; nil when none is armed.
    package private(set) var deadline: RouseInstant?

    /// A timer on `clock`, unarmed.
    package init(clock: any RouseClock) { self.clock = clock }

    /// Arms the timer to run `fire` (with this arming's generation) at `deadline`, unless it is armed for that time
    /// or earlier already.
    package func arm(at deadline: RouseInstant, _ fire: @escaping @Sendable (_ generation: UInt64) async -> Void) {
        if task != nil, let armed = self.deadline, armed <= deadline { return }
        cancel()
        self.deadline = deadline
        let clock = clock
        let generation = generation
        task = Task {
            try? await clock.sleep(until: deadline, tolerance: nil)
            guard !Task.isCancelled else { return }
            await fire(generation)
        }
    }

    /// Disarms the timer (the firing it would have done does not happen, even one already on its way).
    package func cancel() {
        generation &+= 1
        task?.cancel()
        task = nil
        deadline = nil
    }

    /// Marks the timer unarmed when the firing of `generation` reaches its owner, who calls this first and goes on
    /// only when it returns true; false: the firing was cancelled or replaced on its way, and nothing changes.
    package func fired(_ generation: UInt64) -> Bool {
        guard generation == self.generation else { return false }
        self.generation &+= 1
        task = nil
        deadline = nil
        return true
    }

    /// The armed timer's task when its deadline has passed (tests wait for it after advancing a manual clock).
    package var due: Task<Void, Never>? {
        guard let deadline, deadline <= clock.now else { return nil }
        return task
    }
}
