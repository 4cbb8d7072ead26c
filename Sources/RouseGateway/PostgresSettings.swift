import FoundationEssentials
import RousePostgres
import RouseText

/// How the gateway reaches PostgreSQL: `"database": "postgresql://…"` (a libpq URL) or a `"postgres"` object in
/// the configuration. Each member that can be wrong at start has a name, used in the errors that blame it.
package struct PostgresSettings: Sendable, Equatable {
    /// A libpq connection URL (`postgresql://user@host:5432/db?sslmode=require`); the members below override it.
    package var url: String?
    /// Host name, IP address, or a directory holding the server's Unix socket.
    package var host: String?
    /// TCP port.
    package var port: Int?
    /// Database name.
    package var database: String?
    /// Role name.
    package var user: String?
    /// A file whose first line is the password (kept out of the configuration, which may be world-readable).
    package var passwordFile: String?
    /// libpq `sslmode`: disable, allow, prefer, require, verify-ca or verify-full.
    package var sslmode: String?
    /// Connections at most: one for the store thread's writes, the others for reads (admin views, key cache).
    package var poolSize: Int = 4
    /// Seconds a connection attempt may take.
    package var connectTimeoutSeconds: Int = 5

    /// The `sslmode` values libpq knows.
    package static let sslModes: Set<String> = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]

    /// Settings from members (all optional: libpq's defaults and `PG*` variables fill the rest).
    package init(
        url: String? = nil, host: String? = nil, port: Int? = nil, database: String? = nil, user: String? = nil,
        passwordFile: String? = nil, sslmode: String? = nil, poolSize: Int = 4
    ) {
        self.url = url
        self.host = host
        self.port = port
        self.database = database
        self.user = user
        self.passwordFile = passwordFile
        self.sslmode = sslmode
        self.poolSize = poolSize
    }

    /// True for a `database` value that names PostgreSQL rather than a SQLite file.
    package static func isURL(_ database: String) -> Bool { PostgresURL.isURL(database) }

    /// Checks what can be checked without a server (and, with `readingFiles`, that the password file can be
    /// read); the error names the member (`postgres.port`).
    package func validate(readingFiles: Bool = true) throws(GatewayError) {
        if let port, !(1...65_535).contains(port) {
            throw .badConfiguration("postgres.port: \(port) is not a TCP port (1-65535)")
        }
        if let sslmode, !Self.sslModes.contains(sslmode) {
            throw .badConfiguration(
                "postgres.sslmode: '\(sslmode)' is not one of \(Self.sslModes.sorted().joined(separator: ", "))")
        }
        if poolSize < 2 {
            throw .badConfiguration("postgres.poolSize: \(poolSize): at least 2 (one writer, one reader)")
        }
        if connectTimeoutSeconds < 1 {
            throw .badConfiguration("postgres.connectTimeoutSeconds: at least 1")
        }
        if let host, host.isEmpty { throw .badConfiguration("postgres.host: empty") }
        if readingFiles { _ = try password() }
    }

    /// The password from `passwordFile` (its first line), if one is configured.
    func password() throws(GatewayError) -> String? {
        guard let passwordFile else { return nil }
        guard let data = FileManager.default.contents(atPath: passwordFile) else {
            throw .badConfiguration("postgres.passwordFile: cannot read '\(passwordFile)'")
        }
        let text = String(decoding: data, as: UTF8.self)
        return String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
    }

    /// libpq's keyword/value pairs (the URL first, as `dbname` with expansion, so the members override it).
    func connectionParameters() throws(GatewayError) -> [(String, String)] {
        var pairs: [(String, String)] = []
        if let url { pairs.append(("dbname", url)) }
        if let host { pairs.append(("host", host)) }
        if let port { pairs.append(("port", String(port))) }
        if let database { pairs.append(("dbname", database)) }
        if let user { pairs.append(("user", user)) }
        if let password = try password() { pairs.append(("password", password)) }
        if let sslmode { pairs.append(("sslmode", sslmode)) }
        pairs.append(("connect_timeout", String(connectTimeoutSeconds)))
        pairs.append(("application_name", "rouse-gateway"))
        return pairs
    }

    /// Where the settings point, for logs and errors: never a password (one in the URL's user info, which may
    /// itself hold `@`, becomes `***`; so does a `password=` query parameter).
    package var displayName: String {
        if let url { return PostgresURL.redacted(url) }
        return "postgresql://\(user.map { $0 + "@" } ?? "")\(host ?? "")\(port.map { ":\($0)" } ?? "")/"
            + (database ?? "")
    }

    /// Whether the connection may go over the network without TLS being asked for: `sslmode` set nowhere (libpq's
    /// default, `prefer`, falls back to plain text silently) for a host that is not local. The gateway warns.
    package var sslmodeUnsetForRemoteHost: Bool {
        if sslmode != nil { return false }
        if let url, url.includes("sslmode=") { return false }
        let target = host ?? url.flatMap(PostgresURL.host) ?? ""
        // Local: the Unix socket (no host, or a directory), the loopback names and 127.0.0.0/8.
        let local =
            target.isEmpty || target.hasPrefix("/") || ["localhost", "::1", "[::1]"].contains(target)
            || target.hasPrefix("127.")
        return !local
    }

    /// Which member a libpq connection failure blames, from its message: the `postgres` member when it is set,
    /// otherwise the part of the `database` URL that gave it.
    func blame(_ message: String) -> String {
        let member = blamedMember(message)
        guard url != nil else { return "postgres.\(member)" }
        let given: [String: Bool] = [
            "user": user != nil, "passwordFile": passwordFile != nil, "database": database != nil,
            "host": host != nil, "port": port != nil, "sslmode": sslmode != nil,
        ]
        if member.split(separator: "/").contains(where: { given[String($0)] == true }) { return "postgres.\(member)" }
        return "database (the URL's \(member == "passwordFile" ? "password" : member))"
    }

    private func blamedMember(_ message: String) -> String {
        let lower = message.lowercased()
        if lower.includes("password authentication failed") || lower.includes("no password supplied")
            || lower.includes("password") && lower.includes("authentication")
        {
            return passwordFile != nil ? "user/passwordFile" : "user/password"
        }
        if lower.includes("role") && lower.includes("does not exist") { return "user" }
        if lower.includes("database") && lower.includes("does not exist") { return "database" }
        if lower.includes("could not translate host name") || lower.includes("unknown host") { return "host" }
        if lower.includes("ssl") { return "sslmode" }
        // Connection refused, a timeout, anything else: where the server should be.
        return "host/port"
    }
}
