import Synchronization

/// Feeds an indexed bulk send into the sender with at most `limit` pushes unfinished, from the threads that finish
/// them: when a push's outcome arrives (on a transport thread), the next push is submitted right there, so a bulk
/// send costs no task or continuation hand-off per push (the profile of the `Sequence`-driven `sendAll` put most
/// of the wall time in those hand-offs on a loaded machine, see docs/send.md).
///
/// A trampoline, not recursion: an outcome that arrives while this thread (or another) is already submitting only
/// records a free slot, which the submitting loop then fills; so 200,000 pushes refused by the pre-flight (their
/// outcome comes back inside `submit`) never nest calls.
final class BulkFeeder: Sendable {
    private struct State {
        var next = 0
        var unfinished = 0
        var freeSlots = 0
        var pumping = false
        var done: CheckedContinuation<Void, Never>?
    }

    private let count: Int
    private let state: Mutex<State>
    private let submit: @Sendable (Int, BulkFeeder) -> Void

    /// `submit(i, feeder)` sends push `i` and must lead to exactly one `feeder.finished()` call.
    init(count: Int, limit: Int, submit: @escaping @Sendable (Int, BulkFeeder) -> Void) {
        self.count = count
        self.submit = submit
        state = Mutex(State(freeSlots: max(1, limit)))
    }

    /// Starts feeding and returns once every push has finished.
    func run() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let finishedAlready = state.withLock { s -> Bool in
                if count == 0 { return true }
                s.done = c
                return false
            }
            if finishedAlready {
                c.resume()
                return
            }
            pump()
        }
    }

    /// One push has its outcome: its slot goes to the next push.
    func finished() {
        let (resume, pumpHere) = state.withLock { s -> (CheckedContinuation<Void, Never>?, Bool) in
            s.unfinished -= 1
            s.freeSlots += 1
            if s.next == count && s.unfinished == 0 {
                let c = s.done
                s.done = nil
                return (c, false)
            }
            if s.pumping || s.next == count { return (nil, false) }
            s.pumping = true
            return (nil, true)
        }
        if let resume { resume.resume() }
        if pumpHere { drain() }
    }

    private func pump() {
        let start = state.withLock { s -> Bool in
            if s.pumping { return false }
            s.pumping = true
            return true
        }
        if start { drain() }
    }

    /// Submits while there are free slots and pushes left; the caller holds `pumping`.
    private func drain() {
        while true {
            let index = state.withLock { s -> Int? in
                guard s.freeSlots > 0, s.next < count else {
                    s.pumping = false
                    return nil
                }
                s.freeSlots -= 1
                s.unfinished += 1
                defer { s.next += 1 }
                return s.next
            }
            guard let index else { return }
            submit(index, self)
        }
    }
}
