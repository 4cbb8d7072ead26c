/// Delivery to one connected device: which pushes are on the wire unacknowledged, whether the store holds more
/// to send, and when a new push may go out at once. A value-type state machine without I/O: the gateway's store
/// thread drives it and carries out what it returns.
///
/// Rules:
/// - at most `window` non-VoIP pushes are in flight (sent, not acknowledged); the rest wait in the store, so
///   memory per device is bounded by the window, whatever the backlog;
/// - VoIP pushes jump the queue: sent at once while fewer than `window + voipAllowance` are in flight;
/// - once anything waits in the store (`backlog`), a new non-VoIP push waits too, so order is kept: the store
///   returns pending pushes VoIP first, then in arrival order;
/// - acknowledgements free the window; a refill asks the store for the next pushes;
/// - several nodes (PostgreSQL): each push carries the device's sequence number, taken in commit order. A push
///   whose number does not follow the last one this channel accounted for means another node committed the ones
///   between: the store may hold pushes older than this one, so it is not sent from memory; the channel loads
///   what the store holds, in order (in the same transaction, which sees every push committed before it).
package struct DeviceDelivery: Sendable, Hashable {
    /// What to do after an event.
    package enum Action: Sendable, Hashable {
        /// Nothing.
        case none
        /// Write this push on the channel now.
        case send
        /// Load up to `limit` pending pushes from the store (excluding those in flight) and `sent` them.
        case refill(limit: Int)
    }

    /// The device's current channel.
    package let channelID: UInt64
    /// Non-VoIP pushes allowed in flight.
    package let window: Int
    /// Extra in-flight room kept for VoIP pushes.
    package let voipAllowance: Int
    /// Ids sent on this channel and not yet acknowledged (stored and ephemeral).
    package private(set) var inFlight: Set<Int64> = []
    /// Whether the store may hold pushes not yet sent on this channel.
    package private(set) var backlog = true
    /// Several nodes: the device's sequence number up to which every push is in flight, gone, or covered by
    /// `backlog` (`nil`: unknown, or one node, where sequence numbers are not used).
    package private(set) var lastSeq: Int64?

    /// A new channel: everything pending in the store is still to be sent. `lastSeq`: the device's last
    /// sequence number when the channel opened (several nodes), read under the device's row lock.
    package init(channelID: UInt64, window: Int, voipAllowance: Int, lastSeq: Int64? = nil) {
        self.channelID = channelID
        self.window = max(window, 1)
        self.voipAllowance = max(voipAllowance, 0)
        self.lastSeq = lastSeq
    }

    /// The first action of a new channel: load the backlog.
    package var start: Action { .refill(limit: window) }

    /// A push was committed for this device (or, with `apns-expiration: 0`, is to be delivered now). `seq`: the
    /// device's sequence number for it (several nodes).
    package mutating func offer(id: Int64, isVoIP: Bool, seq: Int64? = nil) -> Action {
        if let seq {
            // Checked: `lastSeq` may come from another node's message (`storedElsewhere`), up to `Int64.max`.
            let follows = lastSeq.map { last in last < Int64.max && seq == last + 1 } ?? false
            lastSeq = max(lastSeq ?? seq, seq)
            if !follows {
                // Another node committed pushes in between: they go first, from the store.
                backlog = true
                return refillIfRoom()
            }
        }
        if isVoIP {
            guard inFlight.count < window + voipAllowance else {
                backlog = true
                return .none
            }
            inFlight.insert(id)
            return .send
        }
        guard !backlog, inFlight.count < window else {
            backlog = true
            return .none
        }
        inFlight.insert(id)
        return .send
    }

    /// Whether an `apns-expiration: 0` push can go out now (it is never stored, so it cannot wait).
    package func canSendEphemeral(isVoIP: Bool) -> Bool {
        inFlight.count < window + (isVoIP ? voipAllowance : 0)
    }

    /// Records an ephemeral push as sent.
    package mutating func sentEphemeral(id: Int64) { inFlight.insert(id) }

    /// The store returned `ids` for a refill of `limit`: they are now in flight; fewer than asked means the
    /// store has nothing more.
    package mutating func refilled(ids: [Int64], limit: Int) {
        for id in ids { inFlight.insert(id) }
        backlog = ids.count >= limit
    }

    /// The device acknowledged `ids`; returns whether to refill from the store.
    package mutating func acknowledged(_ ids: some Sequence<Int64>) -> Action {
        for id in ids { inFlight.remove(id) }
        return refillIfRoom()
    }

    /// Pushes left the store without an acknowledgement (collapsed, expired, token dropped).
    package mutating func removed(_ ids: some Sequence<Int64>) -> Action {
        acknowledged(ids)
    }

    /// Another node committed pushes for this device, up to sequence number `seq` (`nil`: maybe, after news from
    /// other nodes were lost): the store may hold more.
    package mutating func storedElsewhere(seq: Int64?) -> Action {
        if let seq { lastSeq = max(lastSeq ?? seq, seq) }
        backlog = true
        return refillIfRoom()
    }

    private func refillIfRoom() -> Action {
        guard backlog, inFlight.count < window else { return .none }
        return .refill(limit: window - inFlight.count)
    }
}
