import Foundation
import RouseGateway
import RouseTestSupport
import Testing

/// The store a test runs against: the store-contract tests run once per backend (`arguments: StoreBackend.allCases`).
/// PostgreSQL is a throwaway cluster per test (its suite needs `.stopsWhatItStarts`); a test fails when it cannot start.
enum StoreBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// Settings for a fresh PostgreSQL cluster (`nil` for SQLite).
    func settings() async throws -> PostgresSettings? {
        guard self == .postgres else { return nil }
        return Self.settings(of: try await PostgresCluster.start())
    }

    /// The settings that reach `cluster` as its superuser, with the password in a file.
    static func settings(of cluster: PostgresCluster) -> PostgresSettings {
        PostgresSettings(
            host: "127.0.0.1", port: cluster.port, database: "postgres", user: cluster.user,
            passwordFile: cluster.passwordFile, poolSize: 4)
    }

    /// A fresh, empty store of this backend.
    func open() async throws -> OpenedStore {
        let directory = try TemporaryDirectory()
        switch self {
        case .sqlite:
            return OpenedStore(
                store: try SQLiteGatewayStore(path: directory.path + "/store.sqlite"), directory: directory)
        case .postgres:
            let cluster = try await PostgresCluster.start()
            let store = try PostgresGatewayStore(settings: Self.settings(of: cluster))
            return OpenedStore(store: store, directory: directory, cluster: cluster)
        }
    }
}

/// A store and what must live as long as it: its directory (SQLite) or its cluster (PostgreSQL).
struct OpenedStore: Sendable {
    let store: any GatewayStore
    let directory: TemporaryDirectory
    var cluster: PostgresCluster?
}
