import Foundation
import RouseWire

/// Protected files (docs/agent.md, "Session integration"): small files the agent seals for the handler under the
/// class it chooses. `protection` is `none`, `until-first-unlock` or `complete`; a `complete` file cannot be read or
/// written while the session is locked (``AgentRequestError`` `protectedDataUnavailable`). The lock screen's
/// events arrive on ``messages`` as `protectedData`.
extension AgentClient {
    /// Replaces the protected file `name` with `data`, sealed under `protection`'s key.
    public func writeProtected(_ name: String, _ data: [UInt8], protection: String) async throws {
        try await expectReply(
            .protectedFile(
                .init(op: .write, name: name, protection: protection, data: Data(data).base64EncodedString())))
    }

    /// The content of the protected file `name` (``AgentRequestError`` `notFound` when there is none).
    public func readProtected(_ name: String) async throws -> [UInt8] {
        let reply = try await expectReply(.protectedFile(.init(op: .read, name: name)))
        guard let text = reply.data, let data = Data(base64Encoded: text) else {
            throw AgentRequestError(code: "badAnswer", detail: "protectedFileReply without data")
        }
        return Array(data)
    }

    /// Seals the protected file `name` again under `protection` (both classes' keys must be held).
    public func reclassProtected(_ name: String, protection: String) async throws {
        try await expectReply(.protectedFile(.init(op: .reclass, name: name, protection: protection)))
    }

    /// Removes the protected file `name`.
    public func removeProtected(_ name: String) async throws {
        try await expectReply(.protectedFile(.init(op: .remove, name: name)))
    }

    @discardableResult
    private func expectReply(_ message: AgentRequest) async throws -> AgentEvent.ProtectedFileReply {
        let answer = try await request(message)
        guard case .protectedFileReply(let reply) = answer else {
            throw AgentRequestError(code: "badAnswer", detail: "protectedFile answered with \(answer.type)")
        }
        return reply
    }
}
