import Foundation
import RouseAgent
import RouseAgentClient

extension Bench {
    /// A running agent's status over its IPC socket, or nil while it does not answer (not up yet, or restarting).
    static func agentStatus(socket: String) async throws -> AgentStatus? {
        guard let client = try? AgentClient(socketPath: socket) else { return nil }
        defer { client.close() }
        try client.send(.status)
        for await reply in client.messages {
            guard case .statusReply(let status) = reply else { return nil }
            return try JSONDecoder().decode(AgentStatus.self, from: Data(status.detail.utf8))
        }
        return nil
    }

    /// Polls `condition` every `every` until it holds, or fails naming `what` after `timeout`. The benchmarks watch
    /// other processes (an agent's status, a handler's file), which offer no event to wait on.
    static func until(
        _ what: String, timeout: Duration = .seconds(30), every: Duration = .milliseconds(5),
        _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: every)
        }
        throw Failure(description: "timed out waiting for \(what)")
    }
}
