/// Where the gateway keeps devices, tokens, provider keys and pending pushes.
///
/// Designed for more than one backend: SQLite (`SQLiteGatewayStore`) for one node; a PostgreSQL store can
/// follow for several nodes (every operation is one statement keyed by device or token, no SQLite-only
/// features are needed by callers). The gateway calls it from its single store thread, so implementations
/// need no internal ordering beyond what one connection gives.
package protocol GatewayStore: Sendable {
    /// What opening the store did to its schema (`from` 0: a new database; `from == to`: up to date). Every backend
    /// migrates when it opens and says so here (`rouse gateway migrate` prints it).
    var migration: GatewaySchema.Migration { get }
    /// Runs `body` in one write transaction: committed durably when `body` returns, rolled back if it throws.
    func write<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T
    /// Runs `body` against a consistent snapshot, for read-only work (admin views, the CLI).
    func read<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T
}

/// The operations inside one store transaction.
package protocol GatewayStoreTransaction: WebPushStoreTransaction, GatewayNodeTransaction {
    // MARK: Pushes

    /// Stores a push; returns its sequence number (the delivery id, increasing).
    func insertPush(_ push: StoredPush) throws -> Int64
    /// Deletes the device's pending pushes for `topic` with this collapse id; returns their ids.
    func deletePending(deviceID: String, topic: String, collapseID: String) throws -> [Int64]
    /// Deletes the device's pending background pushes for `topic`; returns their ids.
    func deletePendingBackground(deviceID: String, topic: String) throws -> [Int64]
    /// Deletes the device's pushes with these ids; returns how many existed.
    func acknowledge(deviceID: String, ids: [Int64]) throws -> Int
    /// Deletes pushes that expired at or before `now`; returns how many.
    func deleteExpired(now: Int64) throws -> Int
    /// Pending pushes (all devices, or one), oldest first, at most `limit`.
    func pendingList(deviceID: String?, limit: Int) throws -> [StoredPush]
    /// Pending pushes per device (from the kept totals).
    func pendingCounts() throws -> [String: Int]
    /// Pending pushes of these devices (from the kept totals).
    func pendingCounts(deviceIDs: [String]) throws -> [String: Int]
    /// Pending pushes in all (from the kept totals).
    func pendingTotal() throws -> Int
    /// Deletes the oldest pending pushes of one token or one device until it holds at most `pushes` pushes with at
    /// most `bytes` payload bytes in all (the store keeps both totals as pushes come and go, so a check within the
    /// quota costs one lookup); returns the deleted pushes, oldest first.
    func trimBacklog(_ owner: BacklogOwner, pushes: Int, bytes: Int) throws -> [(id: Int64, pushType: String?)]

    // MARK: Devices

    /// The device with this id.
    func device(_ id: String) throws -> DeviceRecord?
    /// Adds a device (fails if the id exists).
    func insertDevice(_ device: DeviceRecord) throws
    /// Marks a device revoked, drops its tokens (410 from then on) and its pending pushes; false if unknown.
    func revokeDevice(_ id: String, at time: Int64) throws -> Bool
    /// All devices, by id.
    func devices() throws -> [DeviceRecord]
    /// At most `limit` devices with ids after `after`, by id (one page of a list).
    func devices(after: String?, limit: Int) throws -> [DeviceRecord]
    /// Ids of devices revoked at or after `time` (revocations made by other processes, such as the CLI).
    func devicesRevoked(since time: Int64) throws -> [String]
    /// Stores a one-time enrollment secret by its SHA-256.
    func insertEnrollmentSecret(hash: [UInt8], createdAt: Int64, expiresAt: Int64?) throws
    /// Consumes an unused, unexpired enrollment secret for `deviceID`; false if there is none.
    func consumeEnrollmentSecret(hash: [UInt8], deviceID: String, now: Int64) throws -> Bool

    // MARK: Handler reports

    /// Replaces everything the device reported about its handlers with `reports`.
    func replaceHandlerReports(deviceID: String, _ reports: [HandlerReport]) throws
    /// The handler reports of one device (or all), by device and topic.
    func handlerReports(deviceID: String?) throws -> [HandlerReport]
    /// The handler reports of these devices, by device and topic (one page of the admin list).
    func handlerReports(deviceIDs: [String]) throws -> [HandlerReport]

    // MARK: Tokens

    /// The token record, revoked or not.
    func token(_ token: String) throws -> TokenRecord?
    /// Adds a token.
    func insertToken(_ token: TokenRecord) throws
    /// The tokens of one device (or all), revoked ones included, by creation time.
    func tokens(deviceID: String?) throws -> [TokenRecord]
    /// At most `limit` tokens from position `offset`, by token (one page of a list; the position, not the token, is
    /// the cursor, so a page link never shows a token).
    func tokens(offset: Int, limit: Int) throws -> [TokenRecord]
    /// Marks a device's token revoked (410 Unregistered from then on) and drops its pending pushes; returns their
    /// ids, or `nil` if the device has no such live token.
    func revokeToken(_ token: String, deviceID: String, at time: Int64) throws -> [Int64]?

    // MARK: Provider keys

    /// The provider keys, revoked ones only when asked.
    func providerKeys(includeRevoked: Bool) throws -> [ProviderKeyRecord]
    /// Adds a provider key, or updates the team, public key and topics of an existing one. A revoked key stays
    /// revoked (a restart with the key still in the configuration must not undo a revocation): only
    /// `unrevokeProviderKey` re-enables it.
    func upsertProviderKey(_ key: ProviderKeyRecord) throws
    /// Marks a key revoked; false if unknown or already revoked.
    func revokeProviderKey(_ keyID: String, at time: Int64) throws -> Bool
    /// Re-enables a revoked key (an explicit administrator's action); false if unknown or not revoked.
    func unrevokeProviderKey(_ keyID: String) throws -> Bool
}

/// The operations of several gateway nodes sharing one store (PostgreSQL): device sequence numbers, channel
/// ownership, node leases and the messages between nodes. Every backend implements each one explicitly, with no
/// default, so a new backend cannot forget one: a store for one node answers with its single-node values
/// (`nil`, nothing to do, no nodes), as `SQLiteTransaction+Nodes.swift` does.
package protocol GatewayNodeTransaction {
    /// Takes the device's next sequence number and locks the device's row until COMMIT, so that pushes for one
    /// device commit in the order of their numbers, whichever node stores them; says which channel holds the
    /// device now. `nil`: one node (the push's `id` is commit order already).
    func nextDeviceSequence(deviceID: String) throws -> DeviceSequence?
    /// Records `owner` as the device's channel (under the device's row lock); returns the channel it replaces and
    /// the last sequence number taken, or `nil` on one node.
    func claimChannel(deviceID: String, owner: ChannelOwner) throws -> (previous: ChannelOwner?, lastSeq: Int64)?
    /// Forgets `owner` as the device's channel, if it still is.
    func releaseChannel(deviceID: String, owner: ChannelOwner) throws
    /// Sends `messages` to node `node` when (and only if) this transaction commits, sealed at `now`.
    func notify(node: String, _ messages: [NodeMessage], now: Int64) throws
    /// Records this node alive until `leaseUntil` (created at its first call); forgets the channels a previous
    /// life of the node held when `fresh`.
    func renewNode(_ node: String, now: Int64, leaseUntil: Int64, fresh: Bool) throws
    /// Removes a node that stops (its channels are forgotten).
    func removeNode(_ node: String) throws
    /// The nodes known, with their channels, by id.
    func nodes() throws -> [GatewayNodeRecord]
}

extension GatewayStoreTransaction {
    /// The device's pending, unexpired pushes not in `excluding`: VoIP first, then by id; at most `limit` (WebPush
    /// messages of every urgency).
    package func pending(deviceID: String, excluding: Set<Int64>, limit: Int, now: Int64) throws -> [StoredPush] {
        try pending(deviceID: deviceID, excluding: excluding, limit: limit, now: now, webPushMinimum: 0)
    }
}

/// The channel that holds a device: which node, which of its channels.
package struct ChannelOwner: Sendable, Hashable {
    /// The node's id (configuration `node`).
    package var node: String
    /// The channel's id on that node.
    package var channelID: UInt64

    /// An owner.
    package init(node: String, channelID: UInt64) {
        self.node = node
        self.channelID = channelID
    }
}

/// A device's sequence number for a new push, and who holds its channel.
package struct DeviceSequence: Sendable, Hashable {
    /// The number taken.
    package var seq: Int64
    /// The device's channel, if one is open on any node.
    package var owner: ChannelOwner?

    /// A sequence number.
    package init(seq: Int64, owner: ChannelOwner?) {
        self.seq = seq
        self.owner = owner
    }
}

/// A gateway node sharing the store, as `rouse gateway nodes` lists it.
package struct GatewayNodeRecord: Sendable, Hashable {
    /// Its id.
    package var id: String
    /// When it started (UNIX milliseconds).
    package var startedAt: Int64
    /// Until when its lease runs (UNIX milliseconds); a node whose lease ran out is dead.
    package var leaseExpiresAt: Int64
    /// Device channels it holds.
    package var channels: Int

    /// A node.
    package init(id: String, startedAt: Int64, leaseExpiresAt: Int64, channels: Int) {
        self.id = id
        self.startedAt = startedAt
        self.leaseExpiresAt = leaseExpiresAt
        self.channels = channels
    }
}

/// Whose pending pushes a storage quota counts.
package enum BacklogOwner: Sendable, Hashable {
    /// One device token (lowercase hex).
    case token(String)
    /// One device, all its tokens.
    case device(String)
}
