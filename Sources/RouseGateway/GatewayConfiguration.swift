import FoundationEssentials
import Glibc
import RouseAPNs

/// Everything `rouse-gateway` needs to run, read from a JSON file (see `deploy/rouse-gateway.json`).
///
/// Relative file names in the file are resolved against the file's directory.
package struct GatewayConfiguration: Sendable {
    /// One TLS listener.
    package struct Listener: Sendable {
        /// `host:port` (`0.0.0.0:2197`, `[::]:2197`, `127.0.0.1:0` for a free port).
        package var listen: String
        /// Server certificate chain, PEM (`nil`: h2c, for debugging only).
        package var certificateFile: String?
        /// Server private key, PEM.
        package var privateKeyFile: String?
        /// CA that client certificates are verified against (provider certificates, device certificates);
        /// `nil`: no client certificates asked.
        package var clientCAFile: String?

        /// A listener.
        package init(
            listen: String, certificateFile: String? = nil, privateKeyFile: String? = nil,
            clientCAFile: String? = nil
        ) {
            self.listen = listen
            self.certificateFile = certificateFile
            self.privateKeyFile = privateKeyFile
            self.clientCAFile = clientCAFile
        }
    }

    /// A provider key given in the configuration (in addition to those added with `rouse gateway keys add`).
    package struct Key: Sendable {
        /// `kid`.
        package var keyID: String
        /// `iss`.
        package var teamID: String
        /// Public key, PEM text.
        package var publicKeyPEM: String
        /// The bundle IDs the key may push to (each with its push types' suffixes, as APNs keys); required, since
        /// the team ID binds nothing on a gateway shared by several teams. `["*"]` (`anyTopic`): every topic, for
        /// a single-tenant gateway only (warned at start).
        package var topics: [String]

        /// A key.
        package init(keyID: String, teamID: String, publicKeyPEM: String, topics: [String]) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKeyPEM = publicKeyPEM
            self.topics = topics
        }
    }

    /// Delivery and resource limits.
    package struct Limits: Sendable {
        /// Storage time of a push sent without `apns-expiration` (APNs: "for 30 days or less").
        package var defaultExpirationSeconds: Int64 = 30 * 86_400
        /// Cap on any push's storage time, whatever its `apns-expiration`.
        package var maxExpirationSeconds: Int64 = 30 * 86_400
        /// Non-VoIP pushes in flight per device channel (sent, unacknowledged).
        package var window: Int = 64
        /// Extra in-flight room for VoIP pushes.
        package var voipAllowance: Int = 16
        /// Store jobs queued before new requests are refused (503 / 429): bounds memory under overload.
        package var maxQueuedJobs: Int = 10_000
        /// Device requests (each checks its credential first) queued at most, apart from `maxQueuedJobs`: more get
        /// 503, and provider pushes never wait behind them.
        package var maxQueuedDeviceRequests: Int = 512
        /// Pushes committed in one transaction at most.
        package var maxBatch: Int = 1024
        /// Seconds between heartbeat records on idle channels (0: none).
        package var heartbeatSeconds: Int = 240
        /// Seconds between sweeps of expired pushes.
        package var sweepIntervalSeconds: Int = 30
        /// Ids in one acknowledgement at most.
        package var maxAckIDs: Int = 1000
        /// Device requests in progress per connection at most (more get 429).
        package var maxDeviceRequestsInProgress: Int = 32
        /// Tokens per device at most.
        package var maxTokensPerDevice: Int = 256
        /// Pending pushes one token may hold: beyond, its oldest are dropped (`dropped_total{reason="token-quota"}`),
        /// so an authorized provider cannot fill the disk for an offline token.
        package var maxPendingPushesPerToken: Int = 1000
        /// Payload bytes one token may hold pending (1 MiB; at least the largest payload, 5120).
        package var maxPendingBytesPerToken: Int = 1 << 20
        /// Pending pushes one device may hold, all its tokens together (`reason="device-quota"`).
        package var maxPendingPushesPerDevice: Int = 10_000
        /// Payload bytes one device may hold pending (16 MiB; at least 5120).
        package var maxPendingBytesPerDevice: Int = 16 << 20
        /// Token connections get one stream until their first valid token, as APNs does (clients that open
        /// many streams at once, such as h2load, see REFUSED_STREAM for the others).
        package var oneStreamUntilToken = true
        /// Open connections per listener at most (more are closed at accept, counted in the metrics).
        package var maxConnections: Int = 20_000
        /// Open connections per listener from one source address at most (devices behind one NAT share one).
        package var maxConnectionsPerAddress: Int = 1000
        /// Streams at once on a device connection (a channel and a few requests).
        package var deviceMaxStreams: Int = 16
        /// Seconds a request may take to end (END_STREAM) after its HEADERS, on both ports.
        package var requestTimeoutSeconds: Int = 10
        /// Seconds after accept within which a connection must authenticate (a valid provider token or certificate
        /// push, a device request with a valid credential), whatever else it does; then GOAWAY.
        package var authenticationTimeoutSeconds: Int = 30
        /// Seconds a device connection may go with no frame and no open stream before GOAWAY (a connection holding
        /// a channel is never idle-closed; its liveness is the heartbeats and acks).
        package var deviceIdleTimeoutSeconds: Int = 600

        /// Defaults.
        package init() {}
    }

    /// The APNs environment the provider API answers for.
    package var environment: APNsEnvironment = .production
    /// Provider API (`POST /3/device/<token>`).
    package var provider: Listener
    /// Device API (enrollment, tokens, channel, acks).
    package var device: Listener
    /// Admin endpoint (health, metrics, JSON views); `nil`: none.
    package var admin: Listener?
    /// WebPush ingest and the Matrix push gateway (docs/webpush.md); `nil`: none.
    package var webPush: WebPushConfiguration?
    /// SQLite database file (when `postgres` is nil).
    package var databasePath: String
    /// PostgreSQL instead of SQLite: `"database": "postgresql://…"` or a `"postgres"` object (`nil`: SQLite).
    package var postgres: PostgresSettings?
    /// Provider keys from the configuration.
    package var keys: [Key] = []
    /// The bundle IDs that provider client certificates are trusted for (matched as key topics are): a push on a
    /// certificate connection needs its topic both in the certificate and here, so the client CA cannot grant
    /// more than this list. Required when `provider.clientCAFile` is set; `["*"]`: whatever the certificate lists
    /// (single-tenant gateways, warned at start).
    package var providerCertificateTopics: [String]?
    /// Limits.
    package var limits = Limits()
    /// HTTP/2 event-loop threads per listener.
    package var workers: Int = 1
    /// This node's id among the gateway nodes sharing one PostgreSQL store (letters, digits, `.`, `-`, `_`; at most
    /// 40): stable across restarts, unique among the nodes (two live nodes with one id would take each other's
    /// messages). Default: the host name.
    package var node: String = GatewayConfiguration.defaultNode

    /// The default node id: the host name (`gethostname`, no DNS lookup), cut to a valid id.
    package static let defaultNode: String = {
        var buffer = [UInt8](repeating: 0, count: 256)
        let ok = buffer.withUnsafeMutableBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { chars in
                chars.baseAddress.map { gethostname($0, chars.count - 1) == 0 } ?? false
            }
        }
        let host = ok ? String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self) : ""
        let name = String(host.filter { nodeCharacters.contains($0) }.prefix(40))
        return name.isEmpty ? "node" : name
    }()

    static let nodeCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")

    /// What is wrong with a node id, if anything.
    package static func nodeProblem(_ node: String) -> String? {
        if node.isEmpty || node.count > 40 { return "'\(node)': 1 to 40 characters" }
        if !node.allSatisfy({ nodeCharacters.contains($0) }) {
            return "'\(node)': only letters, digits, '.', '-' and '_'"
        }
        return nil
    }

    /// A configuration.
    package init(provider: Listener, device: Listener, admin: Listener?, databasePath: String) {
        self.provider = provider
        self.device = device
        self.admin = admin
        self.databasePath = databasePath
    }

    /// The topic list entry that grants every topic: `["*"]`.
    package static let anyTopic = "*"

    /// The bundle IDs a list of topics grants, as the APNs rules check them: `nil` for every topic (`["*"]`), none
    /// for no list.
    static func bundleIDs(forTopics topics: [String]?) -> Set<String>? {
        topics == [anyTopic] ? nil : Set(topics ?? [])
    }

    /// Checks that every provider credential names what it may push to: each key has topics, and certificates
    /// have `providerCertificateTopics` when the provider listener trusts a client CA.
    package func checkTopics() throws(GatewayError) {
        for (index, key) in keys.enumerated() {
            if let problem = Self.topicListProblem(key.topics) {
                throw .badConfiguration("keys[\(index)] (\(key.keyID)).topics: \(problem)")
            }
        }
        guard provider.clientCAFile != nil else { return }
        guard let topics = providerCertificateTopics else {
            throw .badConfiguration(
                "provider.certificateTopics: missing: provider.clientCA is set, so name the bundle IDs provider "
                    + "certificates may push to (their own topics must list them too), or [\"*\"] for every topic "
                    + "the certificate lists (single-tenant gateways only)")
        }
        if let problem = Self.topicListProblem(topics) {
            throw .badConfiguration("provider.certificateTopics: \(problem)")
        }
    }

    /// What is wrong with a key's or the certificates' topic list, if anything.
    package static func topicListProblem(_ topics: [String]) -> String? {
        if topics.isEmpty {
            return "empty: name the bundle IDs it may push to, or [\"*\"] for every topic (single-tenant gateways only)"
        }
        if topics.contains(anyTopic), topics.count > 1 { return "\"*\" stands alone (it already grants every topic)" }
        for topic in topics where topic.isEmpty || topic.contains(",") || topic.contains(" ") {
            return "'\(topic)' is not a bundle ID"
        }
        return nil
    }
}
