import FoundationEssentials

/// rouse-pushd's configuration file (JSON): where the API listens, who may use it, the budgets, and the apps with
/// their credentials and endpoints. Apps that share a credential and an endpoint share one pool of connections.
package struct PushServiceConfiguration: Sendable, Equatable, Codable {
    /// The Unix-socket listener (always on).
    package struct UnixListener: Sendable, Equatable, Codable {
        /// Socket path.
        package var path: String
        /// File mode as an octal string (default `"0660"`).
        package var mode: String?
        /// Peer uids allowed (SO_PEERCRED); root is always allowed. Empty with empty `allowGIDs`: only the service's
        /// own uid and root.
        package var allowUIDs: [UInt32]?
        /// Peer gids allowed (primary gid or a supplementary group).
        package var allowGIDs: [UInt32]?
    }

    /// The optional TCP listener: every request carries `Authorization: Bearer <token>`.
    package struct TCPListener: Sendable, Equatable, Codable {
        /// `127.0.0.1:8089`, `[::1]:8089`.
        package var address: String
        /// A file holding the bearer token (one line; at least 32 characters).
        package var bearerTokenFile: String
        /// Also serve h2c (HTTP/2 with prior knowledge) here, with the same token (`127.0.0.1:8090`).
        package var h2cAddress: String?
    }

    /// Budgets; every limit hit is counted in `rouse_pushd_limit_hits_total{limit}`.
    package struct Limits: Sendable, Equatable, Codable {
        /// Open API connections at most (more are answered 503 and closed).
        package var maxConnections: Int?
        /// Request body bytes at most (413).
        package var maxBodyBytes: Int?
        /// Pushes accepted and without an outcome yet, over all apps (503 beyond).
        package var maxPendingPushes: Int?
        /// Pushes in one batch at most (413).
        package var maxBatch: Int?
        /// Seconds a started request may take to arrive in full (then 408 and close).
        package var requestTimeoutSeconds: Double?
        /// Seconds an idle keep-alive connection stays open.
        package var idleTimeoutSeconds: Double?
    }

    /// One app: a topic (bundle ID) with its credential and endpoint.
    package struct App: Sendable, Equatable, Codable {
        /// Bundle ID; a push type's suffix (`.voip`) is added per push.
        package var topic: String
        /// `production`, `sandbox`, or `https://host:port` (a mock, a rouse-gateway).
        package var endpoint: String
        /// CA bundle to verify the endpoint (default: the system store).
        package var caFile: String?
        /// Token auth: the `.p8` file.
        package var keyFile: String?
        /// Token auth: key ID.
        package var keyID: String?
        /// Token auth: team ID.
        package var teamID: String?
        /// Certificate auth: PEM certificate or PKCS#12 bundle (.p12/.pfx).
        package var certFile: String?
        /// Certificate auth: PEM key (when not in `certFile`).
        package var certKeyFile: String?
        /// PKCS#12 password.
        package var certPassword: String?
        /// Bulk connections of the pool (VoIP has its own).
        package var connections: Int?
        /// Default deadline of a push, in milliseconds (default 10 000).
        package var deadlineMs: Int?
        /// Pushes per second allowed for this app (token bucket; absent: unlimited).
        package var ratePerSecond: Double?
        /// Bucket size (default: one second's worth).
        package var burst: Double?
        /// Tokens APNs called invalid are appended here (`token<TAB>reason<TAB>timestamp`).
        package var pruneFile: String?
    }

    /// The Unix-socket API.
    package var unix: UnixListener
    /// The TCP API, if any.
    package var tcp: TCPListener?
    /// Budgets.
    package var limits: Limits?
    /// Apps by name (the name is what `/v1/apps/<name>/…` and a push's `app` say).
    package var apps: [String: App]

    /// Parses and checks a configuration; errors name the field.
    package static func parse(_ data: Data) throws(PushServiceError) -> PushServiceConfiguration {
        let configuration: PushServiceConfiguration
        do {
            configuration = try JSONDecoder().decode(PushServiceConfiguration.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw .configuration("missing '\(Self.path(context.codingPath + [key]))'")
        } catch let DecodingError.typeMismatch(_, context) {
            throw .configuration("'\(Self.path(context.codingPath))': \(context.debugDescription)")
        } catch let DecodingError.valueNotFound(_, context) {
            throw .configuration("'\(Self.path(context.codingPath))' is null")
        } catch let DecodingError.dataCorrupted(context) {
            throw .configuration(
                "not valid JSON: \(context.underlyingError.map { "\($0)" } ?? context.debugDescription)")
        } catch {
            throw .configuration("\(error)")
        }
        try configuration.check()
        return configuration
    }

    /// Reads and checks the file at `path`.
    package static func load(path: String) throws(PushServiceError) -> PushServiceConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .configuration("cannot read \(path)")
        }
        do {
            return try parse(data)
        } catch {
            throw .configuration("\(path): \(error.message)")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    /// The socket file's mode.
    package var unixMode: UInt32 { unix.mode.flatMap { UInt32($0, radix: 8) } ?? 0o660 }

    private func check() throws(PushServiceError) {
        guard !unix.path.isEmpty else { throw .configuration("'unix.path' is empty") }
        if let mode = unix.mode {
            guard let m = UInt32(mode, radix: 8), m <= 0o777 else {
                throw .configuration("'unix.mode' must be an octal mode such as \"0660\" (got '\(mode)')")
            }
        }
        guard !apps.isEmpty else { throw .configuration("'apps' is empty: name at least one app") }
        for (name, app) in apps.sorted(by: { $0.key < $1.key }) {
            let at = "apps.\(name)"
            guard !name.isEmpty, name.utf8.count <= 64,
                name.utf8.allSatisfy({ Self.nameBytes.contains($0) })
            else {
                throw .configuration("app name '\(name)' must be 1–64 of [A-Za-z0-9._-]")
            }
            guard !app.topic.isEmpty else { throw .configuration("'\(at).topic' is empty") }
            let token = app.keyFile != nil || app.keyID != nil || app.teamID != nil
            let certificate = app.certFile != nil
            switch (token, certificate) {
            case (true, true): throw .configuration("'\(at)': give keyFile/keyID/teamID or certFile, not both")
            case (false, false): throw .configuration("'\(at)': no credential (keyFile/keyID/teamID or certFile)")
            case (true, false):
                guard app.keyFile != nil, app.keyID?.utf8.count == 10, app.teamID?.utf8.count == 10 else {
                    throw .configuration("'\(at)': token auth needs keyFile, a 10-character keyID and teamID")
                }
            case (false, true): break
            }
            if let c = app.connections, !(1...64).contains(c) {
                throw .configuration("'\(at).connections' must be 1–64")
            }
            if let d = app.deadlineMs, !(1...3_600_000).contains(d) {
                throw .configuration("'\(at).deadlineMs' must be 1–3600000")
            }
            if let r = app.ratePerSecond, !(r > 0) { throw .configuration("'\(at).ratePerSecond' must be > 0") }
            if let b = app.burst, !(b >= 1) { throw .configuration("'\(at).burst' must be ≥ 1") }
        }
        if let tcp, tcp.address.isEmpty || tcp.bearerTokenFile.isEmpty {
            throw .configuration("'tcp' needs 'address' and 'bearerTokenFile'")
        }
        if let l = limits {
            for (field, value) in [
                ("maxConnections", l.maxConnections), ("maxBodyBytes", l.maxBodyBytes),
                ("maxPendingPushes", l.maxPendingPushes), ("maxBatch", l.maxBatch),
            ] {
                if let value, value < 1 { throw .configuration("'limits.\(field)' must be ≥ 1") }
            }
        }
    }

    private static let nameBytes = Set(Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".utf8))
}

/// Errors of the push service's models.
package struct PushServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case configuration
        case request
    }
    private let code: Code
    /// What exactly is wrong.
    package let message: String

    /// The configuration file is wrong.
    package static func configuration(_ message: String) -> PushServiceError {
        .init(code: .configuration, message: message)
    }
    /// An API request body is wrong (answered 400).
    package static func request(_ message: String) -> PushServiceError { .init(code: .request, message: message) }

    /// The message.
    package var description: String { message }
}
