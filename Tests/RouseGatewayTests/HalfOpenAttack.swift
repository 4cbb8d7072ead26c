import Foundation
import RouseTestSupport

/// `Tests/Interop/h2_attack.py` against one port of the gateway (see `HalfOpenAttackScript`), run with the interop
/// venv's python; its stderr is kept in `directory` and shown when a phase does not come.
enum HalfOpenAttack {
    static func start(
        port: UInt16, path: String, connections: Int, streams: Int, bodyBytes: Int = 65536,
        directory: TemporaryDirectory
    ) async throws -> HalfOpenAttackScript {
        try HalfOpenAttackScript.start(
            python: try await APNsClientLibraries.python(), script: Repository.root + "/Tests/Interop/h2_attack.py",
            port: port, path: path, connections: connections, streams: streams, bodyBytes: bodyBytes,
            stderrPath: directory.path + "/h2-attack-\(UUID().uuidString).stderr")
    }
}
