extension GatewayConfiguration {
    /// Where the store is, for logs: the SQLite file or the PostgreSQL URL (no password).
    package var storeDescription: String { postgres?.displayName ?? databasePath }

    /// Opens the configured store (SQLite unless `postgres` is set), migrating its schema; a database newer than
    /// this build, or PostgreSQL settings that do not connect, are errors naming the cause.
    package func openStore() throws(GatewayError) -> any GatewayStore {
        if let postgres { return try PostgresGatewayStore(settings: postgres) }
        return try SQLiteGatewayStore(path: databasePath)
    }

    /// Opens the store named by a `--database` value: a `postgresql://` URL or a SQLite file.
    package static func openStore(database: String) throws(GatewayError) -> any GatewayStore {
        if PostgresSettings.isURL(database) {
            return try PostgresGatewayStore(settings: PostgresSettings(url: database))
        }
        return try SQLiteGatewayStore(path: database)
    }
}
