import Synchronization

/// How often a server's budgets were hit since it started: what an operator watches to see an attack.
public struct HTTP2ServerLimitCounts: Sendable, Equatable {
    /// Connections closed at accept because `maxConnections` were open.
    public var connectionsRefused: UInt64 = 0
    /// Connections closed at accept because their address had `maxConnectionsPerAddress` open.
    public var connectionsRefusedPerAddress: UInt64 = 0
    /// Times the listener paused because accepting failed for lack of descriptors or memory.
    public var acceptPauses: UInt64 = 0
    /// Streams reset with REFUSED_STREAM because the connection's buffered request bytes were at their budget.
    public var streamsRefusedBufferBudget: UInt64 = 0
    /// Streams reset with REFUSED_STREAM because the server's buffered request bytes, over all its connections, were
    /// at `maxListenerBufferedRequestBytes`.
    public var streamsRefusedListenerBuffer: UInt64 = 0
    /// Streams reset because their request did not end within `requestTimeout`.
    public var requestTimeouts: UInt64 = 0
    /// Connections closed because they did not authenticate within `authenticationTimeout` of accept.
    public var authenticationTimeouts: UInt64 = 0

    public init() {}
}

/// The counters behind `HTTP2ServerLimitCounts`, shared by every loop of one server.
final class ServerLimitCounters: Sendable {
    let connectionsRefused = Atomic<UInt64>(0)
    let connectionsRefusedPerAddress = Atomic<UInt64>(0)
    let acceptPauses = Atomic<UInt64>(0)
    let streamsRefusedBufferBudget = Atomic<UInt64>(0)
    let streamsRefusedListenerBuffer = Atomic<UInt64>(0)
    let requestTimeouts = Atomic<UInt64>(0)
    let authenticationTimeouts = Atomic<UInt64>(0)

    var snapshot: HTTP2ServerLimitCounts {
        var s = HTTP2ServerLimitCounts()
        s.connectionsRefused = connectionsRefused.load(ordering: .relaxed)
        s.connectionsRefusedPerAddress = connectionsRefusedPerAddress.load(ordering: .relaxed)
        s.acceptPauses = acceptPauses.load(ordering: .relaxed)
        s.streamsRefusedBufferBudget = streamsRefusedBufferBudget.load(ordering: .relaxed)
        s.streamsRefusedListenerBuffer = streamsRefusedListenerBuffer.load(ordering: .relaxed)
        s.requestTimeouts = requestTimeouts.load(ordering: .relaxed)
        s.authenticationTimeouts = authenticationTimeouts.load(ordering: .relaxed)
        return s
    }
}
