import RouseActivation
import RouseWire

/// The agent's activation steps: each is the coordinator's (``ActivationCoordinator``), then the rules' timer is
/// rescheduled when a handler's "holds audio" changed.
extension Agent {
    func activate(_ name: String, _ connection: IPCConnection, _ request: AgentRequest.Activate, requestID: Int?) {
        holdChanged(activations.activate(name, connection, request, requestID: requestID))
    }

    func deactivate(_ name: String, _ connection: IPCConnection, _ request: AgentRequest.Deactivate, requestID: Int?) {
        holdChanged(activations.deactivate(name, connection, request, requestID: requestID))
    }

    func callStarted(_ name: String, _ connection: IPCConnection, _ report: AgentRequest.ReportCall) {
        holdChanged(activations.callStarted(name, connection, report))
    }

    func callEnded(_ name: String, notifyOthers: Bool) {
        holdChanged(activations.callEnded(name, notifyOthers: notifyOthers))
    }

    func holderGone(_ name: String, reason: HolderGoneReason) {
        holdChanged(activations.holderGone(name, reason: reason))
    }

    func mayFreeze(_ name: String) -> Bool {
        let (may, changed) = activations.mayFreeze(name)
        holdChanged(changed)
        return may
    }

    func routeChanged(_ reason: String) {
        holdChanged(activations.routeChanged(reason))
    }

    func syncActivation(_ name: String) {
        holdChanged(activations.sync(name))
    }

    func restoreActivations(_ snapshot: ActivationSnapshot) {
        holdChanged(activations.restore(snapshot))
    }

    private func holdChanged(_ changed: Bool) {
        if changed { rescheduleTimer() }
    }

    /// The arbiter's snapshot: who holds what and who waits.
    public func activationSnapshot() -> ActivationSnapshot { activations.snapshot }
}
