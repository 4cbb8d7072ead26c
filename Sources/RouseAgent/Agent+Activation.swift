import RouseActivation
import RouseWire

/// The agent's activation steps: each is the coordinator's (``ActivationCoordinator``), then each handler's
/// "holds audio" is brought in step with the sessions (``applyAudioHolds()``) and the rules' timer rescheduled when
/// one changed. The coordinator reads the handler table; only the agent writes it.
extension Agent {
    func activate(_ name: String, _ connection: IPCConnection, _ request: AgentRequest.Activate, requestID: Int?) {
        activations.activate(name, connection, request, requestID: requestID)
        holdsMayHaveChanged()
    }

    func deactivate(_ name: String, _ connection: IPCConnection, _ request: AgentRequest.Deactivate, requestID: Int?) {
        activations.deactivate(name, connection, request, requestID: requestID)
        holdsMayHaveChanged()
    }

    func callStarted(_ name: String, _ connection: IPCConnection, _ report: AgentRequest.ReportCall) {
        activations.callStarted(name, connection, report)
        holdsMayHaveChanged()
    }

    func callEnded(_ name: String, notifyOthers: Bool) {
        activations.callEnded(name, notifyOthers: notifyOthers)
        holdsMayHaveChanged()
    }

    func holderGone(_ name: String, reason: HolderGoneReason) {
        activations.holderGone(name, reason: reason)
        holdsMayHaveChanged()
    }

    func mayFreeze(_ name: String) -> Bool {
        let may = activations.mayFreeze(name)
        holdsMayHaveChanged()
        return may
    }

    func routeChanged(_ reason: String) {
        activations.routeChanged(reason)
        holdsMayHaveChanged()
    }

    func syncActivation(_ name: String) {
        activations.sync(name)
        holdsMayHaveChanged()
    }

    func restoreActivations(_ snapshot: ActivationSnapshot) {
        activations.restore(snapshot)
        holdsMayHaveChanged()
    }

    /// Writes each handler's "holds audio" (no suspension while it holds a call or background-capable audio) from
    /// the sessions; true when one changed.
    func applyAudioHolds() -> Bool {
        var changed = false
        let current = now
        for name in handlers.names where handlers.setHoldsAudio(name, activations.holdsAudio(name), now: current) {
            changed = true
        }
        return changed
    }

    private func holdsMayHaveChanged() {
        if applyAudioHolds() { rescheduleTimer() }
    }

    /// The arbiter's snapshot: who holds what and who waits.
    package func activationSnapshot() -> ActivationSnapshot { activations.snapshot }
}
