/// PING-based liveness of one connection: a value type driven by `tick`, returning what to do.
///
/// A busy connection (streams in flight) that has been quiet for `busyQuietPeriod` gets a PING; an idle one
/// gets a PING every `idleInterval`; a PING unanswered for `pingTimeout` means the connection is dead.
/// With the defaults a blackholed busy connection is found within about 1.6 s.
public struct ConnectionHealth: Sendable, Hashable {
    /// What the owner should do.
    public enum Action: Sendable, Hashable {
        case none
        case sendPing
        case declareDead
    }

    /// Quiet time on a busy connection before a PING.
    public var busyQuietPeriod: Duration
    /// PING interval on an idle connection.
    public var idleInterval: Duration
    /// How long a PING may stay unanswered.
    public var pingTimeout: Duration
    /// Last time anything arrived (a response, a PING ack, SETTINGS).
    public private(set) var lastActivity: Duration
    /// When the outstanding PING was sent.
    public private(set) var pingSentAt: Duration?

    /// A connection that was alive at `now`.
    public init(
        now: Duration, busyQuietPeriod: Duration = .milliseconds(500), idleInterval: Duration = .seconds(60),
        pingTimeout: Duration = .seconds(1)
    ) {
        self.lastActivity = now
        self.busyQuietPeriod = busyQuietPeriod
        self.idleInterval = idleInterval
        self.pingTimeout = pingTimeout
    }

    /// Something arrived from the server.
    public mutating func activity(now: Duration) {
        lastActivity = now
        pingSentAt = nil
    }

    /// Time passed; `busy` when streams are in flight.
    public mutating func tick(now: Duration, busy: Bool) -> Action {
        if let pingSentAt {
            return now - pingSentAt >= pingTimeout ? .declareDead : .none
        }
        let quiet = now - lastActivity
        if (busy && quiet >= busyQuietPeriod) || quiet >= idleInterval {
            pingSentAt = now
            return .sendPing
        }
        return .none
    }
}
