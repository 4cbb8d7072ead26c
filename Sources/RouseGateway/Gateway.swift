import Dispatch
import FoundationEssentials
import Logging
import RouseAPNs
import RouseClock
import RouseHTTP2
import RouseSystem
import RouseText
import Synchronization

/// `rouse-gateway`: the APNs-compatible provider API, the device API with its channels, the admin endpoint,
/// and the store thread between them.
package final class Gateway: Sendable {
    /// The configuration it runs with.
    package let configuration: GatewayConfiguration
    /// The store.
    package let store: any GatewayStore
    /// Its metrics.
    package let metrics: GatewayMetrics
    let core: GatewayCore
    /// Messages from the other nodes sharing a PostgreSQL store.
    private let listener: PostgresNotifications?
    private let provider: HTTP2Server
    private let device: HTTP2Server
    private let admin: HTTP2Server?
    /// WebPush ingest and the Matrix push gateway (HTTP/1.1 and HTTP/2), if configured.
    private let webPush: HTTP2Server?
    private let keys: ProviderKeyCache
    private let logger: Logger

    /// Where providers connect (the real port when 0 was configured).
    package var providerAddress: SocketAddress { provider.localAddress }
    /// Where devices connect.
    package var deviceAddress: SocketAddress { device.localAddress }
    /// Where WebPush senders connect, if configured.
    package var webPushAddress: SocketAddress? { webPush?.localAddress }
    /// The admin endpoint, if configured.
    package var adminAddress: SocketAddress? { admin?.localAddress }
    /// The provider API's port.
    package var providerPort: UInt16 { provider.localAddress.port }
    /// The device API's port.
    package var devicePort: UInt16 { device.localAddress.port }
    /// The admin endpoint's port, if configured.
    package var adminPort: UInt16? { admin?.localAddress.port }

    /// Opens the store, registers the configured keys and starts listening.
    ///
    /// - Parameter clock: what expirations, sweeps, the key cache and the listeners' timers read; tests pass a
    ///   `ManualClock` to drive them.
    package init(
        configuration: GatewayConfiguration, store: (any GatewayStore)? = nil,
        logger: Logger = Logger(label: "rouse.gateway"), clock: any RouseClock = SystemClock()
    ) throws {
        self.configuration = configuration
        self.logger = logger
        try configuration.checkTopics()
        let store = try store ?? configuration.openStore()
        self.store = store
        let metrics = GatewayMetrics()
        self.metrics = metrics
        let now = clock.wallMilliseconds
        let storedKeys = try store.write { transaction in
            for key in configuration.keys {
                try transaction.upsertProviderKey(
                    ProviderKeyRecord(
                        keyID: key.keyID, teamID: key.teamID, publicKeyPEM: key.publicKeyPEM, topics: key.topics,
                        createdAt: now, revokedAt: nil))
            }
            return try transaction.providerKeys(includeRevoked: true)
        }
        Self.logKeys(storedKeys, configured: Set(configuration.keys.map(\.keyID)), logger: logger)
        let certificateBundleIDs = GatewayConfiguration.bundleIDs(forTopics: configuration.providerCertificateTopics)
        if certificateBundleIDs == nil {
            if configuration.provider.clientCAFile != nil {
                logger.warning(
                    "provider certificates may push to every topic they list (certificateTopics *): single-tenant only",
                    metadata: ["client-ca": "\(configuration.provider.clientCAFile ?? "")"])
            }
        }
        // Several nodes: this node's id is claimed first, before the node takes over the channels the id held.
        let postgres = store as? PostgresGatewayStore
        if let settings = configuration.postgres, settings.sslmodeUnsetForRemoteHost {
            logger.warning(
                "postgres.sslmode is not set for a remote host: libpq may connect without TLS; set it to verify-full",
                metadata: ["database": "\(settings.displayName)"])
        }
        let claim = try postgres.map { postgres throws(GatewayError) in
            try PostgresNotifications.claim(settings: postgres.settings, node: configuration.node)
        }
        let core = try GatewayCore(
            store: store, limits: configuration.limits, metrics: metrics, logger: logger, clock: clock,
            node: configuration.node, webPush: configuration.webPush)
        self.core = core
        let keys = ProviderKeyCache(store: store, logger: logger, clock: clock)
        self.keys = keys
        core.start()
        if let postgres {
            // On a loop of its own: a reconnect blocks in libpq's connect for up to the connect timeout, which must
            // not hold the store loop's heartbeats and sweeps while PostgreSQL is away.
            postgres.seal.setSender(configuration.node)
            listener = try PostgresNotifications(
                settings: postgres.settings, node: configuration.node, clusterKey: postgres.clusterKey, first: claim,
                metrics: metrics, logger: logger, clock: clock
            ) { messages in core.received(messages) }
        } else {
            listener = nil
        }

        let environment = configuration.environment
        var providerConfiguration = try Self.serverConfiguration(configuration.provider, workers: configuration.workers)
        providerConfiguration.maxRequestBodySize = 8192
        providerConfiguration.idleGoAwayDebugData = JSONText.errorBody(reason: .idleTimeout)
        providerConfiguration.shutdownGoAwayDebugData = JSONText.errorBody(reason: .shutdown)
        var deviceConfiguration = try Self.serverConfiguration(configuration.device, workers: configuration.workers)
        deviceConfiguration.maxRequestBodySize = 65536
        // A device needs its channel and a few requests at once, not APNs' 1000 streams.
        deviceConfiguration.settings.maxConcurrentStreams = UInt32(configuration.limits.deviceMaxStreams)
        let adminConfiguration = try configuration.admin.map { listener throws(GatewayError) in
            try Self.adminServerConfiguration(listener, logger: logger)
        }
        Self.applyBudgets(configuration.limits, to: &providerConfiguration)
        Self.applyBudgets(configuration.limits, to: &deviceConfiguration)
        let webPushConfiguration = try configuration.webPush.map { webPush throws(GatewayError) in
            try Self.webPushServerConfiguration(webPush, limits: configuration.limits, workers: configuration.workers)
        }
        // Channels keep their stream open: idle means no stream at all for this long.
        deviceConfiguration.idleTimeout = .seconds(configuration.limits.deviceIdleTimeoutSeconds)
        do {
            let streams = Int(providerConfiguration.settings.maxConcurrentStreams)
            let oneStream = configuration.limits.oneStreamUntilToken
            provider = try HTTP2Server(configuration: providerConfiguration, logger: logger, clock: clock) {
                info, connection in
                let auth = ProviderConnectionAuth(
                    serverEnvironment: environment, keys: keys.registry(),
                    certificate: ProviderHandler.certificate(info.peerCertificate),
                    certificateBundleIDs: certificateBundleIDs)
                return ProviderHandler(
                    core: core, auth: auth, keys: keys, connection: connection, configuredStreams: streams,
                    oneStreamUntilToken: oneStream)
            }
            device = try HTTP2Server(configuration: deviceConfiguration, logger: logger, clock: clock) {
                info, connection in
                DeviceHandler(core: core, connection: connection, peer: info.peerCertificate)
            }
            if let webPushConfiguration, let settings = configuration.webPush {
                webPush = try HTTP2Server(configuration: webPushConfiguration, logger: logger, clock: clock) { _, _ in
                    WebPushHandler(core: core, configuration: settings, clock: clock)
                }
            } else {
                webPush = nil
            }
            if let adminConfiguration {
                let view = AdminView(
                    store: store, metrics: metrics, core: core,
                    listeners: [("provider", provider), ("device", device)] + (webPush.map { [("webpush", $0)] } ?? []))
                let queue = AdminQueue()
                admin = try HTTP2Server(configuration: adminConfiguration, logger: logger, clock: clock) { _, _ in
                    AdminHandler(view: view, queue: queue)
                }
            } else {
                admin = nil
            }
        } catch {
            throw GatewayError.startup("\(error)")
        }
        logger.info(
            "gateway listening",
            metadata: [
                "provider": "\(provider.localAddress)", "device": "\(device.localAddress)",
                "admin": "\(admin.map { "\($0.localAddress)" } ?? "none")",
                "webpush": "\(webPush.map { "\($0.localAddress)" } ?? "none")",
                "database": "\(configuration.storeDescription)",
            ])
    }

    /// Graceful shutdown: stop taking pushes (GOAWAY, answer what is in flight), finish the store's queue,
    /// end every channel with a `shutdown` record, then close device and admin connections.
    package func shutdown(gracePeriod: Duration = .seconds(5)) async {
        await provider.shutdown(gracePeriod: gracePeriod)
        await webPush?.shutdown(gracePeriod: gracePeriod)
        await core.stop()
        await listener?.stop()
        core.stopLoop()
        await device.shutdown(gracePeriod: gracePeriod)
        await admin?.shutdown(gracePeriod: .seconds(1))
        logger.info("gateway stopped")
    }

    /// Creates a one-time enrollment secret (hex) valid for `validity`; the device exchanges it for a
    /// credential at `POST /device/v1/enroll`.
    package func makeEnrollmentSecret(validity: Duration? = .seconds(86_400)) throws -> String {
        try Self.makeEnrollmentSecret(store: store, now: core.clock.wallMilliseconds, validity: validity)
    }

    /// Creates a one-time enrollment secret in `store`.
    package static func makeEnrollmentSecret(store: any GatewayStore, now: Int64, validity: Duration?) throws -> String
    {
        let secret = DeviceAPI.randomBytes(32)
        let expiresAt = validity.map { now + $0.components.seconds * 1000 }
        try store.write { transaction in
            try transaction.insertEnrollmentSecret(
                hash: DeviceSecrets.hash(secret), createdAt: now, expiresAt: expiresAt)
        }
        return Hex.encode(secret)
    }

    /// Start-up warnings about provider keys: a configured key that was revoked stays revoked (the configuration
    /// does not re-enable it; `rouse gateway keys unrevoke` does); a key may push to every topic (`"*"`); a key
    /// stored without topics (by an older version) authorizes nothing.
    private static func logKeys(_ records: [ProviderKeyRecord], configured: Set<String>, logger: Logger) {
        for record in records {
            if let revokedAt = record.revokedAt {
                if configured.contains(record.keyID) {
                    logger.warning(
                        "configured provider key is revoked and stays revoked (rouse gateway keys unrevoke re-enables it)",
                        metadata: ["key-id": "\(record.keyID)", "revoked-at": "\(revokedAt)"])
                }
            } else if record.grantsEveryTopic {
                logger.warning(
                    "provider key may push to every topic (topics \"*\"): for a single-tenant gateway only",
                    metadata: ["key-id": "\(record.keyID)", "team-id": "\(record.teamID)"])
            } else if record.topics == nil {
                logger.warning(
                    "provider key has no topics and authorizes no push (rouse gateway keys add --topic sets them)",
                    metadata: ["key-id": "\(record.keyID)", "team-id": "\(record.teamID)"])
            }
        }
    }

    /// UNIX milliseconds from the system's real-time clock.
    @Sendable package static func systemMilliseconds() -> Int64 { SystemClock().wallMilliseconds }

    /// The budgets both public listeners share (docs/gateway.md, "Running it in public").
    private static func applyBudgets(_ limits: GatewayConfiguration.Limits, to c: inout HTTP2ServerConfiguration) {
        c.maxConnections = limits.maxConnections
        c.maxConnectionsPerAddress = limits.maxConnectionsPerAddress
        c.requestTimeout = .seconds(limits.requestTimeoutSeconds)
        c.authenticationTimeout = .seconds(limits.authenticationTimeoutSeconds)
    }

    /// The WebPush listener: TLS with ALPN `h2` and `http/1.1` (real senders use HTTP/1.1), the public budgets,
    /// bodies buffered up to 16 KiB (a message is at most 4096 bytes, a Matrix notification a few KiB), and no
    /// authentication deadline (senders prove nothing about the connection; each message is checked).
    static func webPushServerConfiguration(
        _ webPush: WebPushConfiguration, limits: GatewayConfiguration.Limits, workers: Int
    ) throws(GatewayError) -> HTTP2ServerConfiguration {
        var configuration = try serverConfiguration(webPush.listener, workers: workers)
        guard configuration.tls != nil else {
            throw .badConfiguration("webpush: certificate and privateKey are required (RFC 8030: HTTP over TLS)")
        }
        configuration.servesHTTP11 = true
        configuration.maxRequestBodySize = WebPushHandler.maxBufferedBody
        configuration.settings.maxConcurrentStreams = 100
        applyBudgets(limits, to: &configuration)
        configuration.authenticationTimeout = nil
        configuration.idleTimeout = .seconds(120)
        return configuration
    }

    /// How often each public listener's budgets were hit (the admin endpoint's metrics show them).
    package var limitCounts: (provider: HTTP2ServerLimitCounts, device: HTTP2ServerLimitCounts) {
        (provider.limitCounts, device.limitCounts)
    }

    /// The admin listener: local by default (a Unix socket `unix:/path`, mode 0600, or loopback, warned: any local
    /// user can connect there), or TLS with a required client certificate when `clientCA` is set. A listener
    /// reachable from other machines without a client certificate is refused.
    static func adminServerConfiguration(_ listener: GatewayConfiguration.Listener, logger: Logger)
        throws(GatewayError) -> HTTP2ServerConfiguration
    {
        let address: SocketAddress
        do {
            address = try SocketAddress(parsing: listener.listen)
        } catch {
            throw .badConfiguration("admin.listen: \(error)")
        }
        var configuration = try serverConfiguration(listener, workers: 1)
        if listener.clientCAFile != nil {
            guard configuration.tls != nil else {
                throw .badConfiguration("admin.clientCA needs admin.certificate and admin.privateKey (mutual TLS)")
            }
            configuration.tls?.clientAuthentication = .required
        } else if !address.isLocal {
            throw .badConfiguration(
                "admin.listen \(listener.listen) is reachable from other machines: give the admin listener "
                    + "certificate, privateKey and clientCA (mutual TLS), or listen on unix:/path or loopback")
        } else if address.unixPath == nil {
            logger.warning(
                "admin endpoint on loopback TCP: any local user can read it; prefer unix:/path",
                metadata: ["admin": "\(listener.listen)"])
        }
        configuration.idleTimeout = .seconds(300)
        return configuration
    }

    private static func serverConfiguration(_ listener: GatewayConfiguration.Listener, workers: Int)
        throws(GatewayError)
        -> HTTP2ServerConfiguration
    {
        var configuration = HTTP2ServerConfiguration()
        configuration.listenAddress = listener.listen
        configuration.workers = workers
        if let certificate = listener.certificateFile {
            guard let key = listener.privateKeyFile else {
                throw .badConfiguration("\(listener.listen): certificate without privateKey")
            }
            var tls = TLSConfiguration.server(certificateChainFile: certificate, privateKeyFile: key)
            if let clientCA = listener.clientCAFile {
                tls.clientCAFile = clientCA
                tls.clientAuthentication = .optional
            }
            configuration.tls = tls
        }
        return configuration
    }
}

/// The provider keys, read from the store at most once a second: a new connection sees keys added or revoked
/// since ("Adding a topic requires new connections").
final class ProviderKeyCache: Sendable {
    private struct Cached {
        var registry = APNsKeyRegistry()
        var loadedAt: RouseInstant?
        /// The last read failed (the store unreachable): the next reads run off the provider loop.
        var failing = false
    }

    private let store: any GatewayStore
    private let logger: Logger
    private let cached = Mutex(Cached())
    /// A read off the provider loop is under way.
    private let refreshing = Atomic<Bool>(false)

    private let clock: any RouseClock

    init(store: any GatewayStore, logger: Logger, clock: any RouseClock) {
        self.store = store
        self.logger = logger
        self.clock = clock
    }

    /// The active keys as of at most a second ago. The first read (at start, before any key is known) runs on the
    /// caller's thread. After it, a read runs on a thread of its own and the caller (a provider loop) waits for it
    /// at most `freshWait`: a store that answers gives fresh keys (a revocation counts at once), a store that does not
    /// (PostgreSQL away: a reconnect blocks in libpq for up to its connect timeout) costs the loop that wait once,
    /// after which the last keys are used, and read again off the loop at most once a second, until it answers.
    func registry() -> APNsKeyRegistry {
        let now = clock.now
        let (hit, known, failing) = cached.withLock { c -> (APNsKeyRegistry?, Bool, Bool) in
            guard let loadedAt = c.loadedAt, loadedAt.duration(to: now) < .seconds(1) else {
                return (nil, c.loadedAt != nil, c.failing)
            }
            return (c.registry, true, c.failing)
        }
        if let hit { return hit }
        guard known else { return load(now: now) ?? cached.withLock { $0.registry } }
        if let done = refreshOffLoop(), !failing {
            _ = done.wait(timeout: .now() + Self.freshWait)
        }
        return cached.withLock { $0.registry }
    }

    /// How long a provider loop waits for a key read that the store is slow to answer.
    static let freshWait = DispatchTimeInterval.milliseconds(100)

    /// Starts a read of the keys on a thread of its own unless one is under way; signals the semaphore it returns
    /// when the read ended.
    private func refreshOffLoop() -> DispatchSemaphore? {
        guard !refreshing.exchange(true, ordering: .acquiringAndReleasing) else { return nil }
        let done = DispatchSemaphore(value: 0)
        Sys.detachedThread(name: "rouse-gateway-keys") { [self] in
            _ = load(now: clock.now)
            refreshing.store(false, ordering: .releasing)
            done.signal()
        }
        return done
    }

    /// Reads the keys; `nil` (and the cache marked failing, for a second) when the store does not answer.
    private func load(now: RouseInstant) -> APNsKeyRegistry? {
        var registry = APNsKeyRegistry()
        do {
            for record in try store.read({ try $0.providerKeys(includeRevoked: false) }) {
                do {
                    registry.insert(
                        try APNsSigningKey(
                            teamID: record.teamID, keyID: record.keyID, publicKeyPEM: record.publicKeyPEM,
                            scope: .team(bundleIDs: record.bundleIDs)))
                } catch {
                    logger.warning("unusable provider key", metadata: ["key-id": "\(record.keyID)"])
                }
            }
        } catch {
            let first = cached.withLock { c -> Bool in
                defer {
                    c.failing = true
                    c.loadedAt = now
                }
                return !c.failing
            }
            if first { logger.error("cannot read provider keys", metadata: ["error": "\(error)"]) }
            return nil
        }
        cached.withLock { $0 = Cached(registry: registry, loadedAt: now, failing: false) }
        return registry
    }
}
