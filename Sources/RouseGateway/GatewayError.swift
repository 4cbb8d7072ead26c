/// An error of the gateway: configuration, storage, or a request that cannot be served.
package struct GatewayError: Error, Sendable, CustomStringConvertible {
    private enum Code: String, Sendable {
        case badConfiguration
        case storage
        case badRequest
        case startup
        case unavailable
        case nodeInUse
        case missingLibrary
    }

    private let code: Code
    /// What went wrong, with the file, field or SQL context.
    package let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// The configuration file or a value in it is invalid.
    package static func badConfiguration(_ detail: String) -> GatewayError { GatewayError(.badConfiguration, detail) }
    /// The store failed (SQLite error, disk full, schema mismatch).
    package static func storage(_ detail: String) -> GatewayError { GatewayError(.storage, detail) }
    /// A device request was malformed.
    package static func badRequest(_ detail: String) -> GatewayError { GatewayError(.badRequest, detail) }
    /// A listener or a file could not be set up.
    package static func startup(_ detail: String) -> GatewayError { GatewayError(.startup, detail) }

    /// The store cannot be reached now (PostgreSQL down, restarting, or the connection broke): providers get 503
    /// `ServiceUnavailable` and retry; the store reconnects by itself.
    package static func unavailable(_ detail: String) -> GatewayError { GatewayError(.unavailable, detail) }

    /// A library the configuration needs could not be loaded (libpq5 for a PostgreSQL store): the installation's to
    /// fix, so starting again will not help.
    package static func missingLibrary(_ detail: String) -> GatewayError { GatewayError(.missingLibrary, detail) }

    /// Another live gateway node uses this node id (it holds the id's lock in PostgreSQL).
    package static func nodeInUse(_ node: String) -> GatewayError {
        GatewayError(
            .nodeInUse,
            "node id \"\(node)\" is in use by another live gateway node on this database (PostgreSQL holds its lock "
                + "until that node's connection ends): give each node its own \"node\" in the configuration")
    }

    /// True when another live node holds this node id.
    package var isNodeInUse: Bool { code == .nodeInUse }

    /// True when the configuration (or what the database holds for it) is at fault.
    package var isBadConfiguration: Bool { code == .badConfiguration }

    /// True when a library the configuration needs could not be loaded (``missingLibrary(_:)``).
    package var isMissingLibrary: Bool { code == .missingLibrary }

    /// True when the store was unreachable (nothing was committed, or the outcome of COMMIT is unknown).
    package var isUnavailable: Bool { code == .unavailable }

    package var description: String { "\(code.rawValue): \(detail)" }
}
