import RouseGateway
import Synchronization

/// A store that forwards to SQLite and records which transaction operations ran, to prove what a request
/// does (and does not) read.
final class RecordingStore: GatewayStore {
    let base: SQLiteGatewayStore
    private let log = Mutex<[String]>([])

    init(path: String) throws { base = try SQLiteGatewayStore(path: path) }

    /// The operations run so far.
    var calls: [String] { log.withLock { $0 } }
    /// Forgets what was recorded.
    func reset() { log.withLock { $0.removeAll() } }
    func record(_ name: String) { log.withLock { $0.append(name) } }

    var migration: GatewaySchema.Migration { base.migration }

    func write<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        try base.write { try body(RecordingTransaction(base: $0, store: self)) }
    }

    func read<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        try base.read { try body(RecordingTransaction(base: $0, store: self)) }
    }
}

/// Forwards every operation, recording its name.
struct RecordingTransaction: GatewayStoreTransaction {
    let base: any GatewayStoreTransaction
    let store: RecordingStore

    private func on<T>(_ name: String = #function, _ body: () throws -> T) rethrows -> T {
        store.record(String(name.prefix { $0 != "(" }))
        return try body()
    }

    func insertPush(_ push: StoredPush) throws -> Int64 { try on { try base.insertPush(push) } }
    func deletePending(deviceID: String, topic: String, collapseID: String) throws -> [Int64] {
        try on { try base.deletePending(deviceID: deviceID, topic: topic, collapseID: collapseID) }
    }
    func deletePendingBackground(deviceID: String, topic: String) throws -> [Int64] {
        try on { try base.deletePendingBackground(deviceID: deviceID, topic: topic) }
    }
    func pending(deviceID: String, excluding: Set<Int64>, limit: Int, now: Int64, webPushMinimum: Int) throws
        -> [StoredPush]
    {
        try on {
            try base.pending(
                deviceID: deviceID, excluding: excluding, limit: limit, now: now, webPushMinimum: webPushMinimum)
        }
    }
    func insertWebPushSubscription(_ subscription: WebPushSubscriptionRecord) throws {
        try on { try base.insertWebPushSubscription(subscription) }
    }
    func webPushSubscription(_ id: String) throws -> WebPushSubscriptionRecord? {
        try on { try base.webPushSubscription(id) }
    }
    func webPushSubscriptions(deviceID: String) throws -> [WebPushSubscriptionRecord] {
        try on { try base.webPushSubscriptions(deviceID: deviceID) }
    }
    func revokeWebPushSubscription(_ id: String, deviceID: String, at time: Int64) throws -> [Int64]? {
        try on { try base.revokeWebPushSubscription(id, deviceID: deviceID, at: time) }
    }
    func acknowledge(deviceID: String, ids: [Int64]) throws -> Int {
        try on { try base.acknowledge(deviceID: deviceID, ids: ids) }
    }
    func deleteExpired(now: Int64) throws -> Int { try on { try base.deleteExpired(now: now) } }
    func pendingList(deviceID: String?, limit: Int) throws -> [StoredPush] {
        try on { try base.pendingList(deviceID: deviceID, limit: limit) }
    }
    func pendingCounts() throws -> [String: Int] { try on { try base.pendingCounts() } }
    func trimBacklog(_ owner: BacklogOwner, pushes: Int, bytes: Int) throws -> [(id: Int64, pushType: String?)] {
        try on { try base.trimBacklog(owner, pushes: pushes, bytes: bytes) }
    }
    func device(_ id: String) throws -> DeviceRecord? { try on { try base.device(id) } }
    func insertDevice(_ device: DeviceRecord) throws { try on { try base.insertDevice(device) } }
    func revokeDevice(_ id: String, at time: Int64) throws -> Bool { try on { try base.revokeDevice(id, at: time) } }
    func devices() throws -> [DeviceRecord] { try on { try base.devices() } }
    func devices(after: String?, limit: Int) throws -> [DeviceRecord] {
        try on { try base.devices(after: after, limit: limit) }
    }
    func pendingCounts(deviceIDs: [String]) throws -> [String: Int] {
        try on { try base.pendingCounts(deviceIDs: deviceIDs) }
    }
    func pendingTotal() throws -> Int { try on { try base.pendingTotal() } }
    func devicesRevoked(since time: Int64) throws -> [String] { try on { try base.devicesRevoked(since: time) } }
    func insertEnrollmentSecret(hash: [UInt8], createdAt: Int64, expiresAt: Int64?) throws {
        try on { try base.insertEnrollmentSecret(hash: hash, createdAt: createdAt, expiresAt: expiresAt) }
    }
    func consumeEnrollmentSecret(hash: [UInt8], deviceID: String, now: Int64) throws -> Bool {
        try on { try base.consumeEnrollmentSecret(hash: hash, deviceID: deviceID, now: now) }
    }
    func replaceHandlerReports(deviceID: String, _ reports: [HandlerReport]) throws {
        try on { try base.replaceHandlerReports(deviceID: deviceID, reports) }
    }
    func handlerReports(deviceIDs: [String]) throws -> [HandlerReport] {
        try on { try base.handlerReports(deviceIDs: deviceIDs) }
    }
    func handlerReports(deviceID: String?) throws -> [HandlerReport] {
        try on { try base.handlerReports(deviceID: deviceID) }
    }
    func token(_ token: String) throws -> TokenRecord? { try on { try base.token(token) } }
    func insertToken(_ token: TokenRecord) throws { try on { try base.insertToken(token) } }
    func tokens(deviceID: String?) throws -> [TokenRecord] { try on { try base.tokens(deviceID: deviceID) } }
    func tokens(offset: Int, limit: Int) throws -> [TokenRecord] {
        try on { try base.tokens(offset: offset, limit: limit) }
    }
    func revokeToken(_ token: String, deviceID: String, at time: Int64) throws -> [Int64]? {
        try on { try base.revokeToken(token, deviceID: deviceID, at: time) }
    }
    func providerKeys(includeRevoked: Bool) throws -> [ProviderKeyRecord] {
        try on { try base.providerKeys(includeRevoked: includeRevoked) }
    }
    func upsertProviderKey(_ key: ProviderKeyRecord) throws { try on { try base.upsertProviderKey(key) } }
    func revokeProviderKey(_ keyID: String, at time: Int64) throws -> Bool {
        try on { try base.revokeProviderKey(keyID, at: time) }
    }
    func unrevokeProviderKey(_ keyID: String) throws -> Bool { try on { try base.unrevokeProviderKey(keyID) } }

    // Several nodes: forwarded and recorded like the rest (SQLite answers for one node).
    func nextDeviceSequence(deviceID: String) throws -> DeviceSequence? {
        try on { try base.nextDeviceSequence(deviceID: deviceID) }
    }
    func claimChannel(deviceID: String, owner: ChannelOwner) throws -> (previous: ChannelOwner?, lastSeq: Int64)? {
        try on { try base.claimChannel(deviceID: deviceID, owner: owner) }
    }
    func releaseChannel(deviceID: String, owner: ChannelOwner) throws {
        try on { try base.releaseChannel(deviceID: deviceID, owner: owner) }
    }
    func notify(node: String, _ messages: [NodeMessage], now: Int64) throws {
        try on { try base.notify(node: node, messages, now: now) }
    }
    func renewNode(_ node: String, now: Int64, leaseUntil: Int64, fresh: Bool) throws {
        try on { try base.renewNode(node, now: now, leaseUntil: leaseUntil, fresh: fresh) }
    }
    func removeNode(_ node: String) throws { try on { try base.removeNode(node) } }
    func nodes() throws -> [GatewayNodeRecord] { try on { try base.nodes() } }
}
