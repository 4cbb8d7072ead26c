/// SQLite serves one node: the multi-node operations have their single-node answers, written out so that the
/// compiler holds every backend to `GatewayNodeTransaction` (there are no defaults to fall back on).
extension SQLiteTransaction {
    /// `nil`: one node, the push's `id` is its commit order already.
    func nextDeviceSequence(deviceID: String) throws -> DeviceSequence? { nil }

    /// `nil`: one node, no other channel to replace.
    func claimChannel(deviceID: String, owner: ChannelOwner) throws -> (previous: ChannelOwner?, lastSeq: Int64)? {
        nil
    }

    /// Nothing to forget: channel owners are not stored for one node.
    func releaseChannel(deviceID: String, owner: ChannelOwner) throws {}

    /// No other node to tell.
    func notify(node: String, _ messages: [NodeMessage], now: Int64) throws {}

    /// No lease to renew.
    func renewNode(_ node: String, now: Int64, leaseUntil: Int64, fresh: Bool) throws {}

    /// No node to remove.
    func removeNode(_ node: String) throws {}

    /// No nodes (`rouse gateway nodes` lists none for SQLite).
    func nodes() throws -> [GatewayNodeRecord] { [] }
}
