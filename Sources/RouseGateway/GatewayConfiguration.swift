import FoundationEssentials
import Glibc
import RouseAPNs

/// Everything `rouse-gateway` needs to run, read from a JSON file (see `deploy/rouse-gateway.json`).
///
/// Relative file names in the file are resolved against the file's directory.
public struct GatewayConfiguration: Sendable {
    /// One TLS listener.
    public struct Listener: Sendable {
        /// `host:port` (`0.0.0.0:2197`, `[::]:2197`, `127.0.0.1:0` for a free port).
        public var listen: String
        /// Server certificate chain, PEM (`nil`: h2c, for debugging only).
        public var certificateFile: String?
        /// Server private key, PEM.
        public var privateKeyFile: String?
        /// CA that client certificates are verified against (provider certificates, device certificates);
        /// `nil`: no client certificates asked.
        public var clientCAFile: String?

        /// A listener.
        public init(
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
    public struct Key: Sendable {
        /// `kid`.
        public var keyID: String
        /// `iss`.
        public var teamID: String
        /// Public key, PEM text.
        public var publicKeyPEM: String
        /// The bundle IDs the key may push to (each with its push types' suffixes, as APNs keys); required, since
        /// the team ID binds nothing on a gateway shared by several teams. `["*"]` (`anyTopic`): every topic, for
        /// a single-tenant gateway only (warned at start).
        public var topics: [String]

        /// A key.
        public init(keyID: String, teamID: String, publicKeyPEM: String, topics: [String]) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKeyPEM = publicKeyPEM
            self.topics = topics
        }
    }

    /// Delivery and resource limits.
    public struct Limits: Sendable {
        /// Storage time of a push sent without `apns-expiration` (APNs: "for 30 days or less").
        public var defaultExpirationSeconds: Int64 = 30 * 86_400
        /// Cap on any push's storage time, whatever its `apns-expiration`.
        public var maxExpirationSeconds: Int64 = 30 * 86_400
        /// Non-VoIP pushes in flight per device channel (sent, unacknowledged).
        public var window: Int = 64
        /// Extra in-flight room for VoIP pushes.
        public var voipAllowance: Int = 16
        /// Store jobs queued before new requests are refused (503 / 429): bounds memory under overload.
        public var maxQueuedJobs: Int = 10_000
        /// Device requests (each checks its credential first) queued at most, apart from `maxQueuedJobs`: more get
        /// 503, and provider pushes never wait behind them.
        public var maxQueuedDeviceRequests: Int = 512
        /// Pushes committed in one transaction at most.
        public var maxBatch: Int = 1024
        /// Seconds between heartbeat records on idle channels (0: none).
        public var heartbeatSeconds: Int = 240
        /// Seconds between sweeps of expired pushes.
        public var sweepIntervalSeconds: Int = 30
        /// Ids in one acknowledgement at most.
        public var maxAckIDs: Int = 1000
        /// Device requests in progress per connection at most (more get 429).
        public var maxDeviceRequestsInProgress: Int = 32
        /// Tokens per device at most.
        public var maxTokensPerDevice: Int = 256
        /// Pending pushes one token may hold: beyond, its oldest are dropped (`dropped_total{reason="token-quota"}`),
        /// so an authorized provider cannot fill the disk for an offline token.
        public var maxPendingPushesPerToken: Int = 1000
        /// Payload bytes one token may hold pending (1 MiB; at least the largest payload, 5120).
        public var maxPendingBytesPerToken: Int = 1 << 20
        /// Pending pushes one device may hold, all its tokens together (`reason="device-quota"`).
        public var maxPendingPushesPerDevice: Int = 10_000
        /// Payload bytes one device may hold pending (16 MiB; at least 5120).
        public var maxPendingBytesPerDevice: Int = 16 << 20
        /// Token connections get one stream until their first valid token, as APNs does (clients that open
        /// many streams at once, such as h2load, see REFUSED_STREAM for the others).
        public var oneStreamUntilToken = true
        /// Open connections per listener at most (more are closed at accept, counted in the metrics).
        public var maxConnections: Int = 20_000
        /// Open connections per listener from one source address at most (devices behind one NAT share one).
        public var maxConnectionsPerAddress: Int = 1000
        /// Streams at once on a device connection (a channel and a few requests).
        public var deviceMaxStreams: Int = 16
        /// Seconds a request may take to end (END_STREAM) after its HEADERS, on both ports.
        public var requestTimeoutSeconds: Int = 10
        /// Seconds after accept within which a connection must authenticate (a valid provider token or certificate
        /// push, a device request with a valid credential), whatever else it does; then GOAWAY.
        public var authenticationTimeoutSeconds: Int = 30
        /// Seconds a device connection may go with no frame and no open stream before GOAWAY (a connection holding
        /// a channel is never idle-closed; its liveness is the heartbeats and acks).
        public var deviceIdleTimeoutSeconds: Int = 600

        /// Defaults.
        public init() {}
    }

    /// The APNs environment the provider API answers for.
    public var environment: APNsEnvironment = .production
    /// Provider API (`POST /3/device/<token>`).
    public var provider: Listener
    /// Device API (enrollment, tokens, channel, acks).
    public var device: Listener
    /// Admin endpoint (health, metrics, JSON views); `nil`: none.
    public var admin: Listener?
    /// WebPush ingest and the Matrix push gateway (docs/webpush.md); `nil`: none.
    public var webPush: WebPushConfiguration?
    /// SQLite database file (when `postgres` is nil).
    public var databasePath: String
    /// PostgreSQL instead of SQLite: `"database": "postgresql://…"` or a `"postgres"` object (`nil`: SQLite).
    public var postgres: PostgresSettings?
    /// Provider keys from the configuration.
    public var keys: [Key] = []
    /// The bundle IDs that provider client certificates are trusted for (matched as key topics are): a push on a
    /// certificate connection needs its topic both in the certificate and here, so the client CA cannot grant
    /// more than this list. Required when `provider.clientCAFile` is set; `["*"]`: whatever the certificate lists
    /// (single-tenant gateways, warned at start).
    public var providerCertificateTopics: [String]?
    /// Limits.
    public var limits = Limits()
    /// HTTP/2 event-loop threads per listener.
    public var workers: Int = 1
    /// This node's id among the gateway nodes sharing one PostgreSQL store (letters, digits, `.`, `-`, `_`; at most
    /// 40): stable across restarts, unique among the nodes (two live nodes with one id would take each other's
    /// messages). Default: the host name.
    public var node: String = GatewayConfiguration.defaultNode

    /// The default node id: the host name (`gethostname`, no DNS lookup), cut to a valid id.
    public static let defaultNode: String = {
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
    public static func nodeProblem(_ node: String) -> String? {
        if node.isEmpty || node.count > 40 { return "'\(node)': 1 to 40 characters" }
        if !node.allSatisfy({ nodeCharacters.contains($0) }) {
            return "'\(node)': only letters, digits, '.', '-' and '_'"
        }
        return nil
    }

    /// A configuration.
    public init(provider: Listener, device: Listener, admin: Listener?, databasePath: String) {
        self.provider = provider
        self.device = device
        self.admin = admin
        self.databasePath = databasePath
    }

    /// The topic list entry that grants every topic: `["*"]`.
    public static let anyTopic = "*"

    /// The bundle IDs a list of topics grants, as the APNs rules check them: `nil` for every topic (`["*"]`), none
    /// for no list.
    static func bundleIDs(forTopics topics: [String]?) -> Set<String>? {
        topics == [anyTopic] ? nil : Set(topics ?? [])
    }

    /// Checks that every provider credential names what it may push to: each key has topics, and certificates
    /// have `providerCertificateTopics` when the provider listener trusts a client CA.
    public func checkTopics() throws(GatewayError) {
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
    public static func topicListProblem(_ topics: [String]) -> String? {
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
