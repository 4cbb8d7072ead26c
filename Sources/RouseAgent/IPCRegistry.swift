/// The agent's IPC connections: every open one by id, the handler each registered one speaks for, and when each
/// socket-path connection that has not registered is closed. Owned by the ``Agent`` and touched only on its
/// isolation; the agent reads the connections' messages and decides what they mean.
final class IPCRegistry {
    private var connections: [Int: IPCConnection] = [:]
    private var registered: [Int: String] = [:]
    private var nextID = 1
    /// When each socket-path connection that has not registered is closed (machine time).
    private var deadlines: [Int: Duration] = [:]
    /// The one timer that closes them.
    let sweep: AgentTimer
    /// The IPC budgets' counters.
    let meter = IPCMeter()

    /// Time a socket-path connection has to register (an admin connection: to finish).
    static let registrationTimeout = Duration.seconds(5)

    /// No connections yet; `sweep` will close those that do not register.
    init(sweep: AgentTimer) { self.sweep = sweep }

    /// A new connection on `fd` (started: its messages flow).
    func open(fd: Int32, peer: IPCConnection.Peer?, launchedFor: String?) -> IPCConnection {
        let connection = IPCConnection(id: nextID, fd: fd, peer: peer, launchedFor: launchedFor, meter: meter)
        nextID += 1
        connections[connection.id] = connection
        connection.start()
        return connection
    }

    /// `connection` must register by `deadline` (machine time).
    func expectRegistration(_ connection: IPCConnection, by deadline: Duration) {
        deadlines[connection.id] = deadline
    }

    /// The earliest registration deadline.
    var nextDeadline: Duration? { deadlines.values.min() }

    /// The connections whose deadline has passed at `now` without a registration (they are no longer expected).
    func overdue(now: Duration) -> [IPCConnection] {
        let due = deadlines.filter { $0.value <= now }.keys
        for id in due { deadlines[id] = nil }
        let overdue = due.sorted().compactMap { id in registered[id] == nil ? connections[id] : nil }
        meter.count(\.registrationTimeouts, by: overdue.count)
        return overdue
    }

    /// `connection` registered as handler `name`.
    func register(_ connection: IPCConnection, as name: String) {
        registered[connection.id] = name
        deadlines[connection.id] = nil
    }

    /// The handler `connection` registered as, if it did.
    func handler(of connection: IPCConnection) -> String? { registered[connection.id] }

    /// `connection` closed: forgotten; returns the handler it had registered as.
    func closed(_ connection: IPCConnection) -> String? {
        connections.removeValue(forKey: connection.id)
        deadlines[connection.id] = nil
        return registered.removeValue(forKey: connection.id)
    }

    /// Every open connection.
    var all: [IPCConnection] { Array(connections.values) }

    /// The budgets' counters, with the connections open now.
    var counters: IPCCounters {
        var counters = meter.snapshot
        counters.connections = connections.count
        counters.unregistered = connections.count - registered.count
        return counters
    }
}
