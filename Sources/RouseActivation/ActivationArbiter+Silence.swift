/// Background audio must be audible (iOS: "Apps that play audio content in the background must play audible content
/// and not silence"): which handlers are kept from suspension by playback alone, the sessions whose sound the agent
/// checks (docs/activations.md, "Audible background audio").
extension ActivationArbiter {
    /// Whether only active playback sessions keep `handler` from being suspended: no call (reported or a call
    /// session), no active record or playAndRecord session. Those are the protection the agent checks for sound.
    public func protectedOnlyByPlayback(_ handler: HandlerID) -> Bool {
        guard holders[handler]?.inCall != true else { return false }
        let protecting = entries.filter {
            $0.id.handler == handler && $0.isActive && ($0.isCall || $0.configuration.category.runsInBackground)
        }
        return !protecting.isEmpty && protecting.allSatisfy { !$0.isCall && $0.configuration.category == .playback }
    }
}
