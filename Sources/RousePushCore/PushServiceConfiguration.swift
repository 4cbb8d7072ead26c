import Foundation

/// rouse-pushd's configuration file (JSON): where the API listens, who may use it, the budgets, and the apps with
/// their credentials and endpoints. Apps that share a credential and an endpoint share one pool of connections.
public struct PushServiceConfiguration: Sendable, Equatable, Codable {
    /// The Unix-socket listener (always on).
    public struct UnixListener: Sendable, Equatable, Codable {
        /// Socket path.
        public var path: String
        /// File mode as an octal string (default `"0660"`).
        public var mode: String?
        /// Peer uids allowed (SO_PEERCRED); root is always allowed. Empty with empty `allowGIDs`: only the service's
        /// own uid and root.
        public var allowUIDs: [UInt32]?
        /// Peer gids allowed (primary gid or a supplementary group).
        public var allowGIDs: [UInt32]?
    }

    /// The optional TCP listener: every request carries `Authorization: Bearer <token>`.
    public struct TCPListener: Sendable, Equatable, Codable {
        /// `127.0.0.1:8089`, `[::1]:8089`.
        public var address: String
        /// A file holding the bearer token (one line; at least 32 characters).
        public var bearerTokenFile: String
        /// Also serve h2c (HTTP/2 with prior knowledge) here, with the same token (`127.0.0.1:8090`).
        public var h2cAddress: String?
    }

    /// Budgets; every limit hit is counted in `rouse_pushd_limit_hits_total{limit}`.
    public struct Limits: Sendable, Equatable, Codable {
        /// Open API connections at most (more are answered 503 and closed).
        public var maxConnections: Int?
        /// Request body bytes at most (413).
        public var maxBodyBytes: Int?
        /// Pushes accepted and without an outcome yet, over all apps (503 beyond).
        public var maxPendingPushes: Int?
        /// Pushes in one batch at most (413).
        public var maxBatch: Int?
        /// Seconds a started request may take to arrive in full (then 408 and close).
        public var requestTimeoutSeconds: Double?
        /// Seconds an idle keep-alive connection stays open.
        public var idleTimeoutSeconds: Double?
    }

    /// One app: a topic (bundle ID) with its credential and endpoint.
    public struct App: Sendable, Equatable, Codable {
        /// Bundle ID; a push type's suffix (`.voip`) is added per push.
        public var topic: String
        /// `production`, `sandbox`, or `https://host:port` (a mock, a rouse-gateway).
        public var endpoint: String
        /// CA bundle to verify the endpoint (default: the system store).
        public var caFile: String?
        /// Token auth: the `.p8` file.
        public var keyFile: String?
        /// Token auth: key ID.
        public var keyID: String?
        /// Token auth: team ID.
        public var teamID: String?
        /// Certificate auth: PEM certificate or PKCS#12 bundle (.p12/.pfx).
        public var certFile: String?
        /// Certificate auth: PEM key (when not in `certFile`).
        public var certKeyFile: String?
        /// PKCS#12 password.
        public var certPassword: String?
        /// Bulk connections of the pool (VoIP has its own).
        public var connections: Int?
        /// Default deadline of a push, in milliseconds (default 10 000).
        public var deadlineMs: Int?
        /// Pushes per second allowed for this app (token bucket; absent: unlimited).
        public var ratePerSecond: Double?
        /// Bucket size (default: one second's worth).
        public var burst: Double?
        /// Tokens APNs called invalid are appended here (`token<TAB>reason<TAB>timestamp`).
        public var pruneFile: String?
    }

    /// The Unix-socket API.
    public var unix: UnixListener
    /// The TCP API, if any.
    public var tcp: TCPListener?
    /// Budgets.
    public var limits: Limits?
    /// Apps by name (the name is what `/v1/apps/<name>/…` and a push's `app` say).
    public var apps: [String: App]

    /// Parses and checks a configuration; errors name the field.
    public static func parse(_ data: Data) throws(PushServiceError) -> PushServiceConfiguration {
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
    public static func load(path: String) throws(PushServiceError) -> PushServiceConfiguration {
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
    public var unixMode: UInt32 { unix.mode.flatMap { UInt32($0, radix: 8) } ?? 0o660 }

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
public struct PushServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case configuration
        case request
    }
    private let code: Code
    /// What exactly is wrong.
    public let message: String

    /// The configuration file is wrong.
    public static func configuration(_ message: String) -> PushServiceError {
        .init(code: .configuration, message: message)
    }
    /// An API request body is wrong (answered 400).
    public static func request(_ message: String) -> PushServiceError { .init(code: .request, message: message) }

    /// The message.
    public var description: String { message }
}
