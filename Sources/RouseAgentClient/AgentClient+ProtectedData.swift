import RouseText
import RouseWire

/// Protected files (docs/agent.md, "Session integration"): small files the agent seals for the handler under the
/// class it chooses. `protection` is `none`, `until-first-unlock`, `complete` or `complete-unless-open`; a `complete`
/// file cannot be read or written while the session is locked (``AgentRequestError`` `protectedDataUnavailable`); a
/// `complete-unless-open` file can be written while locked, read only while unlocked, or through a handle from
/// ``openProtected(_:create:)`` at any time until it is closed. The lock screen's events arrive on ``messages`` as
/// `protectedData`.
extension AgentClient {
    /// Replaces the protected file `name` with `data`, sealed under `protection`'s key.
    public func writeProtected(_ name: String, _ data: [UInt8], protection: String) async throws {
        try await expectReply(
            .protectedFile(
                .init(op: .write, name: name, protection: protection, data: Base64.encode(data))))
    }

    /// The content of the protected file `name` (``AgentRequestError`` `notFound` when there is none).
    public func readProtected(_ name: String) async throws -> [UInt8] {
        let reply = try await expectReply(.protectedFile(.init(op: .read, name: name)))
        guard let text = reply.data, let data = Base64.decode(text) else {
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

    /// Opens the `complete-unless-open` file `name` (the session must be unlocked), or creates it empty when missing
    /// and `create` (possible while locked); returns its handle. Reads and writes through the handle go on after the
    /// session locks, until ``closeProtected(_:handle:)`` or this connection's end.
    public func openProtected(_ name: String, create: Bool = false) async throws -> Int {
        let reply = try await expectReply(
            .protectedFile(.init(op: .open, name: name, protection: create ? "complete-unless-open" : nil)))
        guard let handle = reply.handle else {
            throw AgentRequestError(code: "badAnswer", detail: "open answered without a handle")
        }
        return handle
    }

    /// Replaces the content of the open file `name` through its `handle`.
    public func writeProtected(_ name: String, handle: Int, _ data: [UInt8]) async throws {
        try await expectReply(
            .protectedFile(.init(op: .write, name: name, data: Base64.encode(data), handle: handle)))
    }

    /// The content of the open file `name`, through its `handle`.
    public func readProtected(_ name: String, handle: Int) async throws -> [UInt8] {
        let reply = try await expectReply(.protectedFile(.init(op: .read, name: name, handle: handle)))
        guard let text = reply.data, let data = Base64.decode(text) else {
            throw AgentRequestError(code: "badAnswer", detail: "protectedFileReply without data")
        }
        return Array(data)
    }

    /// Closes the open file `name`'s `handle`: the agent forgets its key.
    public func closeProtected(_ name: String, handle: Int) async throws {
        try await expectReply(.protectedFile(.init(op: .close, name: name, handle: handle)))
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
