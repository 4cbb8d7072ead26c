import FoundationEssentials
import RouseAPNs
import RouseText
import RouseWire

extension GatewayConfiguration {
    private struct File: Decodable {
        struct Listener: Decodable {
            var listen: String
            var certificate: String?
            var privateKey: String?
            var clientCA: String?
            var certificateTopics: [String]?
        }

        struct Key: Decodable {
            var keyID: String
            var teamID: String
            var publicKey: String
            var topics: [String]?
        }

        struct Limits: Decodable {
            var defaultExpirationSeconds: Int64?
            var maxExpirationSeconds: Int64?
            var window: Int?
            var voipAllowance: Int?
            var maxQueuedJobs: Int?
            var maxQueuedDeviceRequests: Int?
            var maxBatch: Int?
            var heartbeatSeconds: Int?
            var sweepIntervalSeconds: Int?
            var maxAckIDs: Int?
            var maxDeviceRequestsInProgress: Int?
            var maxTokensPerDevice: Int?
            var maxPendingPushesPerToken: Int?
            var maxPendingBytesPerToken: Int?
            var maxPendingPushesPerDevice: Int?
            var maxPendingBytesPerDevice: Int?
            var oneStreamUntilToken: Bool?
            var maxConnections: Int?
            var maxConnectionsPerAddress: Int?
            var deviceMaxStreams: Int?
            var requestTimeoutSeconds: Int?
            var authenticationTimeoutSeconds: Int?
            var deviceIdleTimeoutSeconds: Int?
        }

        struct WebPush: Decodable {
            var listen: String
            var certificate: String?
            var privateKey: String?
            var origin: String
            var maxSubscriptionsPerDevice: Int?
            var maxSubscriptionsPerApp: Int?
            var messagesPerSecond: Double?
            var burst: Double?
        }

        var environment: String?
        var provider: Listener
        var webpush: WebPush?
        var device: Listener
        var admin: Listener?
        struct Postgres: Decodable {
            var host: String?
            var port: Int?
            var database: String?
            var user: String?
            var passwordFile: String?
            var sslmode: String?
            var poolSize: Int?
            var connectTimeoutSeconds: Int?
        }

        var database: String?
        var postgres: Postgres?
        var keys: [Key]?
        var limits: Limits?
        var workers: Int?
        var node: String?
    }

    /// Reads a configuration file (JSON):
    ///
    /// ```json
    /// {
    ///   "environment": "production",
    ///   "provider": {"listen": "0.0.0.0:2197", "certificate": "server.pem", "privateKey": "server.key",
    ///                "clientCA": "ca.pem", "certificateTopics": ["com.example.rouse"]},
    ///   "device": {"listen": "0.0.0.0:2198", "certificate": "server.pem", "privateKey": "server.key",
    ///              "clientCA": "ca.pem"},
    ///   "admin": {"listen": "127.0.0.1:9797"},
    ///   "database": "/var/lib/rouse-gateway/gateway.sqlite",
    ///   (or "database": "postgresql://rouse@db.example/rouse", or "postgres": {"host": "db.example",
    ///    "port": 5432, "database": "rouse", "user": "rouse", "passwordFile": "pg-password",
    ///    "sslmode": "verify-full", "poolSize": 4})
    ///   "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "apns-key.pub.pem",
    ///             "topics": ["com.example.rouse"]}],
    ///   "limits": {"defaultExpirationSeconds": 2592000, "maxExpirationSeconds": 2592000, "window": 64},
    ///   "node": "gw-1"   (several nodes on one PostgreSQL: each its own id; default: the host name)
    /// }
    /// ```
    /// `publicKey` is a PEM file name or PEM text. Every key names its `topics` (`["*"]`: every topic), and
    /// `provider.certificateTopics` is required with `provider.clientCA`: a credential without topics is an error
    /// naming it. Unknown members are errors (a typo must not pass silently).
    package static func load(path: String) throws(GatewayError) -> GatewayConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .badConfiguration("\(path): cannot read")
        }
        return try parse(data: data, baseDirectory: PathText.parent(path), source: path)
    }

    /// Parses configuration JSON; relative file names resolve against `baseDirectory`.
    package static func parse(data: Data, baseDirectory: String, source: String) throws(GatewayError)
        -> GatewayConfiguration
    {
        if let unknown = unknownMember(data) { throw .badConfiguration("\(source): unknown member \(unknown)") }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch let error as DecodingError {
            throw .badConfiguration("\(source): \(describe(error))")
        } catch {
            throw .badConfiguration("\(source): \(error)")
        }
        func resolve(_ name: String?) -> String? {
            guard let name, !name.isEmpty else { return nil }
            if name.hasPrefix("/") || baseDirectory.isEmpty { return name }
            return baseDirectory + "/" + name
        }
        func listener(_ l: File.Listener) -> Listener {
            Listener(
                listen: l.listen, certificateFile: resolve(l.certificate), privateKeyFile: resolve(l.privateKey),
                clientCAFile: resolve(l.clientCA))
        }
        let database = file.database ?? ""
        let isURL = PostgresSettings.isURL(database)
        var configuration = GatewayConfiguration(
            provider: listener(file.provider), device: listener(file.device), admin: file.admin.map(listener),
            databasePath: isURL ? database : resolve(database) ?? database)
        switch (file.database, file.postgres) {
        case (nil, nil):
            throw .badConfiguration("\(source): $.database: missing (a SQLite file, or postgresql://…)")
        case (.some, .some) where !isURL:
            throw .badConfiguration(
                "\(source): $.database is a SQLite file and $.postgres is set: give one store (or a postgresql:// URL)")
        case (_, let postgres?):
            var settings = PostgresSettings(
                url: isURL ? database : nil, host: postgres.host, port: postgres.port, database: postgres.database,
                user: postgres.user, passwordFile: resolve(postgres.passwordFile), sslmode: postgres.sslmode)
            settings.poolSize = postgres.poolSize ?? settings.poolSize
            settings.connectTimeoutSeconds = postgres.connectTimeoutSeconds ?? settings.connectTimeoutSeconds
            configuration.postgres = settings
        case (_, nil) where isURL:
            configuration.postgres = PostgresSettings(url: database)
        case (_, nil):
            break
        }
        if let postgres = configuration.postgres {
            do {
                try postgres.validate(readingFiles: false)
            } catch {
                throw .badConfiguration("\(source): \(error.detail)")
            }
        }
        if let name = file.environment {
            guard let environment = APNsEnvironment(rawValue: name) else {
                throw .badConfiguration("\(source): environment '\(name)' is not sandbox or production")
            }
            configuration.environment = environment
        }
        for (index, key) in (file.keys ?? []).enumerated() {
            var pem = key.publicKey
            if !pem.includes("-----BEGIN") {
                guard let path = resolve(pem), let data = FileManager.default.contents(atPath: path) else {
                    throw .badConfiguration("\(source): keys[\(index)].publicKey: cannot read '\(key.publicKey)'")
                }
                pem = String(decoding: data, as: UTF8.self)
            }
            guard let topics = key.topics else {
                throw .badConfiguration(
                    "\(source): keys[\(index)] (\(key.keyID)).topics: missing: a key must name the bundle IDs it may "
                        + "push to, or [\"*\"] for every topic (single-tenant gateways only)")
            }
            configuration.keys.append(Key(keyID: key.keyID, teamID: key.teamID, publicKeyPEM: pem, topics: topics))
        }
        if let topics = file.provider.certificateTopics { configuration.providerCertificateTopics = topics }
        if let w = file.webpush {
            if let problem = WebPushConfiguration.originProblem(w.origin) {
                throw .badConfiguration("\(source): $.webpush.origin: \(problem)")
            }
            var webPush = WebPushConfiguration(
                listener: Listener(
                    listen: w.listen, certificateFile: resolve(w.certificate), privateKeyFile: resolve(w.privateKey)),
                origin: w.origin)
            webPush.maxSubscriptionsPerDevice = w.maxSubscriptionsPerDevice ?? webPush.maxSubscriptionsPerDevice
            webPush.maxSubscriptionsPerApp = w.maxSubscriptionsPerApp ?? webPush.maxSubscriptionsPerApp
            webPush.messagesPerSecond = w.messagesPerSecond ?? webPush.messagesPerSecond
            webPush.burst = w.burst ?? webPush.burst
            guard webPush.maxSubscriptionsPerDevice >= 1, webPush.maxSubscriptionsPerApp >= 1,
                webPush.messagesPerSecond > 0, webPush.burst >= 1
            else {
                throw .badConfiguration(
                    "\(source): $.webpush: maxSubscriptionsPerDevice, maxSubscriptionsPerApp and burst must be at "
                        + "least 1, messagesPerSecond above 0")
            }
            configuration.webPush = webPush
        }
        do {
            try configuration.checkTopics()
        } catch {
            throw .badConfiguration("\(source): \(error.detail)")
        }
        if let node = file.node {
            if let problem = GatewayConfiguration.nodeProblem(node) {
                throw .badConfiguration("\(source): $.node: \(problem)")
            }
            configuration.node = node
        }
        if let workers = file.workers {
            guard workers >= 1 else { throw .badConfiguration("\(source): workers must be at least 1") }
            configuration.workers = workers
        }
        if let l = file.limits {
            var limits = Limits()
            limits.defaultExpirationSeconds = l.defaultExpirationSeconds ?? limits.defaultExpirationSeconds
            limits.maxExpirationSeconds = l.maxExpirationSeconds ?? limits.maxExpirationSeconds
            limits.window = l.window ?? limits.window
            limits.voipAllowance = l.voipAllowance ?? limits.voipAllowance
            limits.maxQueuedJobs = l.maxQueuedJobs ?? limits.maxQueuedJobs
            limits.maxQueuedDeviceRequests = l.maxQueuedDeviceRequests ?? limits.maxQueuedDeviceRequests
            limits.maxBatch = l.maxBatch ?? limits.maxBatch
            limits.heartbeatSeconds = l.heartbeatSeconds ?? limits.heartbeatSeconds
            limits.sweepIntervalSeconds = l.sweepIntervalSeconds ?? limits.sweepIntervalSeconds
            limits.maxAckIDs = l.maxAckIDs ?? limits.maxAckIDs
            limits.maxDeviceRequestsInProgress = l.maxDeviceRequestsInProgress ?? limits.maxDeviceRequestsInProgress
            limits.maxTokensPerDevice = l.maxTokensPerDevice ?? limits.maxTokensPerDevice
            limits.maxPendingPushesPerToken = l.maxPendingPushesPerToken ?? limits.maxPendingPushesPerToken
            limits.maxPendingBytesPerToken = l.maxPendingBytesPerToken ?? limits.maxPendingBytesPerToken
            limits.maxPendingPushesPerDevice = l.maxPendingPushesPerDevice ?? limits.maxPendingPushesPerDevice
            limits.maxPendingBytesPerDevice = l.maxPendingBytesPerDevice ?? limits.maxPendingBytesPerDevice
            limits.oneStreamUntilToken = l.oneStreamUntilToken ?? limits.oneStreamUntilToken
            limits.maxConnections = l.maxConnections ?? limits.maxConnections
            limits.maxConnectionsPerAddress = l.maxConnectionsPerAddress ?? limits.maxConnectionsPerAddress
            limits.deviceMaxStreams = l.deviceMaxStreams ?? limits.deviceMaxStreams
            limits.requestTimeoutSeconds = l.requestTimeoutSeconds ?? limits.requestTimeoutSeconds
            limits.authenticationTimeoutSeconds = l.authenticationTimeoutSeconds ?? limits.authenticationTimeoutSeconds
            limits.deviceIdleTimeoutSeconds = l.deviceIdleTimeoutSeconds ?? limits.deviceIdleTimeoutSeconds
            let positive: [(String, Int64)] = [
                ("defaultExpirationSeconds", limits.defaultExpirationSeconds),
                ("maxExpirationSeconds", limits.maxExpirationSeconds), ("window", Int64(limits.window)),
                ("maxQueuedJobs", Int64(limits.maxQueuedJobs)),
                ("maxQueuedDeviceRequests", Int64(limits.maxQueuedDeviceRequests)),
                ("maxBatch", Int64(limits.maxBatch)),
                ("sweepIntervalSeconds", Int64(limits.sweepIntervalSeconds)), ("maxAckIDs", Int64(limits.maxAckIDs)),
                ("maxDeviceRequestsInProgress", Int64(limits.maxDeviceRequestsInProgress)),
                ("maxTokensPerDevice", Int64(limits.maxTokensPerDevice)),
                ("maxPendingPushesPerToken", Int64(limits.maxPendingPushesPerToken)),
                ("maxPendingPushesPerDevice", Int64(limits.maxPendingPushesPerDevice)),
                ("maxConnections", Int64(limits.maxConnections)),
                ("maxConnectionsPerAddress", Int64(limits.maxConnectionsPerAddress)),
                ("deviceMaxStreams", Int64(limits.deviceMaxStreams)),
                ("requestTimeoutSeconds", Int64(limits.requestTimeoutSeconds)),
                ("authenticationTimeoutSeconds", Int64(limits.authenticationTimeoutSeconds)),
                ("deviceIdleTimeoutSeconds", Int64(limits.deviceIdleTimeoutSeconds)),
            ]
            for (name, value) in positive where value < 1 {
                throw .badConfiguration("\(source): limits.\(name) must be at least 1")
            }
            let largestPayload = APNsPushType.voip.maxPayloadBytes
            for (name, value) in [
                ("maxPendingBytesPerToken", limits.maxPendingBytesPerToken),
                ("maxPendingBytesPerDevice", limits.maxPendingBytesPerDevice),
            ] where value < largestPayload {
                throw .badConfiguration(
                    "\(source): limits.\(name) must be at least \(largestPayload) (the largest payload)")
            }
            if limits.voipAllowance < 0 || limits.heartbeatSeconds < 0 {
                throw .badConfiguration("\(source): limits.voipAllowance and heartbeatSeconds must not be negative")
            }
            configuration.limits = limits
        }
        return configuration
    }

    /// The members the file may have, by object kind (internal: the packaged example is checked against it).
    static let knownMembers: [String: Set<String>] = [
        "$": [
            "environment", "provider", "device", "admin", "database", "postgres", "keys", "limits", "workers", "node",
            "webpush",
        ],
        "webpush": [
            "listen", "certificate", "privateKey", "origin", "maxSubscriptionsPerDevice", "maxSubscriptionsPerApp",
            "messagesPerSecond", "burst",
        ],
        "postgres": [
            "host", "port", "database", "user", "passwordFile", "sslmode", "poolSize", "connectTimeoutSeconds",
        ],
        "provider": ["listen", "certificate", "privateKey", "clientCA", "certificateTopics"],
        "listener": ["listen", "certificate", "privateKey", "clientCA"],
        "key": ["keyID", "teamID", "publicKey", "topics"],
        "limits": [
            "defaultExpirationSeconds", "maxExpirationSeconds", "window", "voipAllowance", "maxQueuedJobs",
            "maxQueuedDeviceRequests",
            "maxBatch", "heartbeatSeconds", "sweepIntervalSeconds", "maxAckIDs", "maxDeviceRequestsInProgress",
            "maxTokensPerDevice", "maxPendingPushesPerToken", "maxPendingBytesPerToken", "maxPendingPushesPerDevice",
            "maxPendingBytesPerDevice", "oneStreamUntilToken", "maxConnections", "maxConnectionsPerAddress",
            "deviceMaxStreams", "requestTimeoutSeconds", "authenticationTimeoutSeconds", "deviceIdleTimeoutSeconds",
        ],
    ]

    /// The first member the schema does not know, as a JSON path.
    private static func unknownMember(_ data: Data) -> String? {
        guard let root = try? JSONValue.parse(data), root.object != nil else { return nil }
        func check(_ object: JSONValue?, kind: String, path: String) -> String? {
            guard let object = object?.object, let known = knownMembers[kind] else { return nil }
            for key in object.keys.sorted() where !known.contains(key) { return "\(path).\(key)" }
            return nil
        }
        if let found = check(root, kind: "$", path: "$") { return found }
        if let found = check(root["provider"], kind: "provider", path: "$.provider") { return found }
        for name in ["device", "admin"] {
            if let found = check(root[name], kind: "listener", path: "$.\(name)") { return found }
        }
        if let found = check(root["limits"], kind: "limits", path: "$.limits") { return found }
        if let found = check(root["webpush"], kind: "webpush", path: "$.webpush") { return found }
        if let found = check(root["postgres"], kind: "postgres", path: "$.postgres") { return found }
        for (index, key) in (root["keys"]?.array ?? []).enumerated() {
            if let found = check(key, kind: "key", path: "$.keys[\(index)]") { return found }
        }
        return nil
    }

    /// A decoding fault with its JSON path (`$.keys[0].file: missing`), worded as the device API words it.
    static func describe(_ error: DecodingError) -> String { DeviceAPIDecodingError(error).detail }
}
