import RouseClock

/// One timer of the agent on its clock: sleeps until the earliest deadline it was armed for, then runs what it was
/// armed with (on the agent). Owned by one part and touched only on the agent's isolation.
///
/// An armed timer due no later than a new deadline is kept rather than re-created: a cancelled sleep would still wake
/// the process at its deadline, so re-arming at every input would leave one wake-up behind each time. A timer that
/// fires before anything is due does nothing and is armed again by its owner.
package final class AgentTimer {
    private let clock: any RouseClock
    private var task: Task<Void, Never>?
    /// When the armed timer fires; nil when none is armed.
    package private(set) var deadline: RouseInstant?

    /// A timer on `clock`, unarmed.
    package init(clock: any RouseClock) { self.clock = clock }

    /// Arms the timer to run `fire` at `deadline`, unless it is armed for that time or earlier already.
    package func arm(at deadline: RouseInstant, _ fire: @escaping @Sendable () async -> Void) {
        if task != nil, let armed = self.deadline, armed <= deadline { return }
        cancel()
        self.deadline = deadline
        let clock = clock
        task = Task {
            try? await clock.sleep(until: deadline, tolerance: nil)
            guard !Task.isCancelled else { return }
            await fire()
        }
    }

    /// Disarms the timer (the firing it would have done does not happen).
    package func cancel() {
        task?.cancel()
        task = nil
        deadline = nil
    }

    /// Marks the timer unarmed: its owner calls this first when the timer fires.
    package func fired() {
        task = nil
        deadline = nil
    }

    /// The armed timer's task when its deadline has passed (tests wait for it after advancing a manual clock).
    package var due: Task<Void, Never>? {
        guard let deadline, deadline <= clock.now else { return nil }
        return task
    }
}
