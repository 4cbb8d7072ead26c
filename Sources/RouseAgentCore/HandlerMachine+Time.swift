/// Time changes (iOS's `UIApplicationSignificantTimeChangeNotification`): a running handler is told at once; a
/// suspended or launching one gets one notice at its wake, the net of every change while it slept (a clock step and a
/// time-zone change become one notice with both set), next to the other coalesced notices (reachability).
extension HandlerMachine {
    /// The wall clock stepped (`clockStep`) and/or the time zone changed (`timeZone`).
    package mutating func timeChanged(clockStep: Bool, timeZone: Bool) -> [HandlerAction] {
        switch lifecycle {
        case .suspended, .launching:
            let old = coalescedTime ?? (false, false)
            coalescedTime = (old.clockStep || clockStep, old.timeZone || timeZone)
            return []
        case .notRunning:
            return []
        case .background, .active, .inactive:
            return [.notify(.timeChanged(clockStep: clockStep, timeZone: timeZone))]
        }
    }

    /// The coalesced time notice, once (at a resume or a registration).
    mutating func flushCoalescedTime() -> [HandlerAction] {
        guard let time = coalescedTime else { return [] }
        coalescedTime = nil
        return [.notify(.timeChanged(clockStep: time.clockStep, timeZone: time.timeZone))]
    }
}
