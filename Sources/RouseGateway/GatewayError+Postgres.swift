import RousePostgres

extension GatewayError {
    /// libpq's error as the gateway's, with the same text: a statement the server refused is ``storage(_:)``; a
    /// connection that failed or broke, or a server that does not serve now, is ``unavailable(_:)`` (providers get
    /// 503 and retry); libpq that could not be loaded is ``missingLibrary(_:)`` (the installation's to fix).
    init(_ error: PostgresError) {
        if error.isLibraryMissing {
            self = .missingLibrary(error.description)
        } else {
            self = error.isUnavailable ? .unavailable(error.description) : .storage(error.description)
        }
    }

    /// A libpq call (`try GatewayError.wrapping(try connection.query(…))`), its error as the gateway's.
    @discardableResult
    static func wrapping<T>(_ body: @autoclosure () throws(PostgresError) -> T) throws(GatewayError) -> T {
        do { return try body() } catch { throw GatewayError(error) }
    }
}

extension PostgresConnection {
    /// Connects with the gateway's `settings`; a failure is ``GatewayError/unavailable(_:)`` naming the setting it
    /// blames and where the settings point (never a password).
    static func connect(_ settings: PostgresSettings) throws(GatewayError) -> PostgresConnection {
        let parameters = try settings.connectionParameters()
        do {
            return try PostgresConnection(parameters: parameters)
        } catch {
            guard error.isConnectFailure else { throw GatewayError(error) }
            throw .unavailable(
                "\(settings.blame(error.message)): cannot connect to \(settings.displayName): \(error.message)")
        }
    }
}
