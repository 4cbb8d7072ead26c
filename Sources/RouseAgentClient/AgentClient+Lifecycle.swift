import RouseWire

extension AgentClient {
    /// `restorationFinished`: restoration is over for this launch (after the offered state was applied, refused, or
    /// when none was offered). A crash before it discards the preserved state at the next launch (the guide's rule);
    /// after it, what the handler preserves is kept. Without it, the launch finishes at the agent's grace timer.
    /// Returns once the agent answered (`ok`).
    public func restorationFinished() async throws {
        _ = try await request(.restorationFinished)
    }
}
