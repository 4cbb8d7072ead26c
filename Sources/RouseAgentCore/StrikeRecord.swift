/// A handler's strikes (missed VoIP reports and socket wakes, launches that did not register in time) within the
/// strike window, and whether they stopped its VoIP launches: a part of ``HandlerMachine`` that owns only this
/// state (the async-http-client model: the machine delegates, each part changes only its own state).
struct StrikeRecord: Sendable, Equatable {
    /// Times of the strikes still counted, oldest first.
    private(set) var times: [Duration] = []
    /// VoIP launches stopped after too many strikes (until ``clear()``).
    private(set) var blocked = false

    /// Drops strikes older than `window`.
    mutating func expire(now: Duration, window: Duration) {
        times.removeAll { now - $0 > window }
    }

    /// One more strike at `now`; true when it is the one that stopped VoIP launches (`limit` reached, not stopped
    /// before).
    mutating func strike(now: Duration, limit: Int) -> Bool {
        times.append(now)
        guard times.count >= limit, !blocked else { return false }
        blocked = true
        return true
    }

    /// Registered again: strikes cleared, launches allowed; how many there were.
    mutating func clear() -> Int {
        defer {
            times = []
            blocked = false
        }
        return times.count
    }

    /// What was persisted: strike times on this machine's clock and the block.
    mutating func restore(times: [Duration], blocked: Bool) {
        self.times = times.sorted()
        self.blocked = blocked
    }
}
