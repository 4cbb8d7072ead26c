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
/// - acknowledgements free the window; a refill asks the store for the next pushes.
public struct DeviceDelivery: Sendable, Hashable {
    /// What to do after an event.
    public enum Action: Sendable, Hashable {
        /// Nothing.
        case none
        /// Write this push on the channel now.
        case send
        /// Load up to `limit` pending pushes from the store (excluding those in flight) and `sent` them.
        case refill(limit: Int)
    }

    /// The device's current channel.
    public let channelID: UInt64
    /// Non-VoIP pushes allowed in flight.
    public let window: Int
    /// Extra in-flight room kept for VoIP pushes.
    public let voipAllowance: Int
    /// Ids sent on this channel and not yet acknowledged (stored and ephemeral).
    public private(set) var inFlight: Set<Int64> = []
    /// Whether the store may hold pushes not yet sent on this channel.
    public private(set) var backlog = true

    /// A new channel: everything pending in the store is still to be sent.
    public init(channelID: UInt64, window: Int, voipAllowance: Int) {
        self.channelID = channelID
        self.window = max(window, 1)
        self.voipAllowance = max(voipAllowance, 0)
    }

    /// The first action of a new channel: load the backlog.
    public var start: Action { .refill(limit: window) }

    /// A push was committed for this device (or, with `apns-expiration: 0`, is to be delivered now).
    public mutating func offer(id: Int64, isVoIP: Bool) -> Action {
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
    public func canSendEphemeral(isVoIP: Bool) -> Bool {
        inFlight.count < window + (isVoIP ? voipAllowance : 0)
    }

    /// Records an ephemeral push as sent.
    public mutating func sentEphemeral(id: Int64) { inFlight.insert(id) }

    /// The store returned `ids` for a refill of `limit`: they are now in flight; fewer than asked means the
    /// store has nothing more.
    public mutating func refilled(ids: [Int64], limit: Int) {
        for id in ids { inFlight.insert(id) }
        backlog = ids.count >= limit
    }

    /// The device acknowledged `ids`; returns whether to refill from the store.
    public mutating func acknowledged(_ ids: some Sequence<Int64>) -> Action {
        for id in ids { inFlight.remove(id) }
        return refillIfRoom()
    }

    /// Pushes left the store without an acknowledgement (collapsed, expired, token dropped).
    public mutating func removed(_ ids: some Sequence<Int64>) -> Action {
        acknowledged(ids)
    }

    private func refillIfRoom() -> Action {
        guard backlog, inFlight.count < window else { return .none }
        return .refill(limit: window - inFlight.count)
    }
}
