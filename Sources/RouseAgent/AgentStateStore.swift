import FoundationEssentials
import RouseAgentCore
import RouseState

/// What the agent persists across restarts: its credential, push tokens, the de-duplication window, and
/// per-handler strikes. Encrypted storage (RouseState) can replace ``JSONFileAgentStateStore``
/// behind this protocol.
package protocol AgentStateStore: Sendable {
    /// The stored state, or an empty one.
    func load() throws -> AgentState
    /// Replaces the stored state durably (atomic: temp file, fsync, rename).
    func save(_ state: AgentState) throws
}

/// ``AgentStateStore`` as one JSON file, written atomically by RouseState's `AtomicWriter` (temp + fsync + rename +
/// fsync of the directory).
package struct JSONFileAgentStateStore: AgentStateStore {
    /// The file.
    package let path: String

    /// A store at `path` (its directory must exist).
    package init(path: String) { self.path = path }

    /// The stored state, or an empty one when the file does not exist.
    package func load() throws -> AgentState {
        guard FileManager.default.fileExists(atPath: path) else { return AgentState() }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try JSONDecoder().decode(AgentState.self, from: data)
    }

    /// Writes the state atomically (temp file, fsync, rename, fsync of the directory).
    package func save(_ state: AgentState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(state)
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        try AtomicWriter(directory: directory.isEmpty ? "/" : directory).write(Array(data), to: name)
    }
}
