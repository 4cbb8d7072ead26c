import Synchronization

/// The IPC budgets' counters, shown by `rouse agent status` (`ipc`): each budget, when hit, counts here. Updated
/// from the accept thread, the connections' reader threads and the agent.
package struct IPCCounters: Codable, Sendable, Equatable {
    /// Socket-path and launch connections open now.
    package var connections = 0
    /// Of those, not registered (admin requests, or peers that have yet to register).
    package var unregistered = 0
    /// Connections closed at accept: the total or the uid's quota was reached.
    package var refusedOverQuota = 0
    /// Connections closed for not registering in time.
    package var registrationTimeouts = 0
    /// Times a connection's reader stopped reading because the frames it had queued for the agent reached the
    /// connection's budget (its peer then waits, its socket buffer fills).
    package var inboundFull = 0
    /// Connections closed because the agent could not write to them without blocking (a peer that does not read).
    package var outboundFull = 0
    /// Descriptors passed by peers, closed off the agent's executor.
    package var peerDescriptorsClosed = 0
    /// Times a connection's reader stopped reading because descriptors its peer passed wait to be handled or closed
    /// (``IPCConnection/pendingDescriptors``; a close can block as long as the peer wants).
    package var closesPending = 0
    /// Connections that ended while descriptors their peer passed still waited to be closed: each keeps its slot in
    /// its uid's quota (``refusedOverQuota`` beyond) until the last of them is closed.
    package var slotsKeptForCloses = 0
    /// Connections closed because the agent's queue of descriptor closes was over its limit when they passed one.
    package var closeQueueFull = 0
    /// Descriptors that came without an `addTransfer` claiming them (closed by the connection's reader).
    package var strayDescriptors = 0
    /// Blocking jobs (descriptor closes, upload copies) waiting for a thread of their own.
    package var blockingQueued = 0
    /// Blocking jobs running (a number stuck at the threads' count means peers hold them).
    package var blockingRunning = 0
    /// Uploads copied (or refused) from descriptors handlers passed, off the executor.
    package var uploadCopies = 0

    /// No counts.
    package init() {}
}

/// The counters, shared by the threads that count (a `Mutex`).
final class IPCMeter: Sendable {
    private let counters = Mutex(IPCCounters())

    /// Adds to one counter.
    func count(_ counter: WritableKeyPath<IPCCounters, Int>, by amount: Int = 1) {
        counters.withLock { $0[keyPath: counter] += amount }
    }

    /// The counters now.
    var snapshot: IPCCounters { counters.withLock { $0 } }
}
