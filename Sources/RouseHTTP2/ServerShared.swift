import CNghttp2
import Logging
import RouseEventLoop
import Synchronization

/// What every connection of one server shares: configuration, TLS context, handler factory, per-loop read
/// buffers and the live-connection registry.
final class ServerShared: @unchecked Sendable {  // `registries` is under its Mutex; the rest is immutable.
    let configuration: HTTP2ServerConfiguration
    let tls: TLSContext?
    let factory: HTTP2HandlerFactory
    let logger: Logger
    let option: OpaquePointer?
    private let nextID = Atomic<UInt64>(1)
    let openConnections = Atomic<Int>(0)
    /// Set when shutdown begins: a connection accepted by then and still on its way to its loop is closed there.
    let stopping = Atomic<Bool>(false)
    /// Request bytes buffered by every connection of the server (`maxListenerBufferedRequestBytes`).
    let bufferedRequestBytes = Atomic<Int>(0)
    /// Budget hits, for metrics.
    let counters = ServerLimitCounters()
    /// Connections admitted and not yet closed, in total and per source address (all loops).
    private let admitted = Mutex<(total: Int, perAddress: [String: Int])>((0, [:]))
    /// Loop-confined per-loop state, keyed by loop identity.
    private let perLoop: [ObjectIdentifier: PerLoop]

    final class PerLoop {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        var connections: [ObjectIdentifier: ServerConnection] = [:]
        deinit { buffer.deallocate() }
    }

    init(
        configuration: HTTP2ServerConfiguration, tls: TLSContext?, factory: @escaping HTTP2HandlerFactory,
        logger: Logger, loops: [EventLoop]
    ) {
        self.configuration = configuration
        self.tls = tls
        self.factory = factory
        self.logger = logger
        self.option = ServerCallbacks.makeOption(resetProtection: configuration.resetProtection)
        var perLoop: [ObjectIdentifier: PerLoop] = [:]
        for loop in loops { perLoop[ObjectIdentifier(loop)] = PerLoop() }
        self.perLoop = perLoop
    }

    deinit {
        if let option { nghttp2_option_del(option) }
    }

    func makeConnectionID() -> UInt64 { nextID.add(1, ordering: .relaxed).oldValue }

    /// What belongs to `loop`: one of the loops the server was made with, or a bug.
    private func state(of loop: EventLoop) -> PerLoop {
        guard let state = perLoop[ObjectIdentifier(loop)] else {
            preconditionFailure("loop \(loop.name) is not one of this server's loops")
        }
        return state
    }

    /// The read buffer of `loop` (call on that loop only).
    func readBuffer(for loop: EventLoop) -> UnsafeMutableRawBufferPointer {
        state(of: loop).buffer
    }

    /// Connections living on `loop` (call on that loop only).
    func connections(on loop: EventLoop) -> [ServerConnection] {
        Array(state(of: loop).connections.values)
    }

    /// Takes a connection slot for `host`, or counts the refusal and returns false (caps from the configuration).
    func admit(host: String) -> Bool {
        let verdict = admitted.withLock { state -> Int in
            if state.total >= configuration.maxConnections { return 1 }
            let fromHost = state.perAddress[host, default: 0]
            if fromHost >= configuration.maxConnectionsPerAddress { return 2 }
            state.total += 1
            state.perAddress[host] = fromHost + 1
            return 0
        }
        switch verdict {
        case 1: counters.connectionsRefused.add(1, ordering: .relaxed)
        case 2: counters.connectionsRefusedPerAddress.add(1, ordering: .relaxed)
        default: return true
        }
        return false
    }

    /// Gives back a slot taken by `admit(host:)`.
    func release(host: String) {
        admitted.withLock { state in
            state.total -= 1
            let left = state.perAddress[host, default: 1] - 1
            state.perAddress[host] = left > 0 ? left : nil
        }
    }

    func connectionOpened(_ c: ServerConnection) {
        state(of: c.loop).connections[ObjectIdentifier(c)] = c
        openConnections.add(1, ordering: .relaxed)
    }

    func connectionClosed(_ c: ServerConnection) {
        if state(of: c.loop).connections.removeValue(forKey: ObjectIdentifier(c)) != nil {
            openConnections.subtract(1, ordering: .relaxed)
            release(host: c.peerHost)
        }
    }
}
