import RouseWire

/// `restorationFinished` (docs/handler-protocol.md, docs/state.md "Crash during restoration"): the handler says its
/// restoration is over; its launch finishes now rather than at the grace timer, so a crash from now on keeps what it
/// preserves, and a crash before it discards the state at the next launch.
extension Agent {
    /// Finishes the launch of `name` (the same as the grace timer would; the timer then finds nothing to do).
    func restorationFinished(_ name: String, _ connection: IPCConnection, requestID: Int?) {
        if persistence != nil, preservations.flags(of: name).launchBegun {
            finishLaunch(name, connection)
        }
        connection.send(.ok(.init()), requestID: requestID)
    }
}
