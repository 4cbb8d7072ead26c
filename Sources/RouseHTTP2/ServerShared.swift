import CNghttp2
import Logging
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

    /// The read buffer of `loop` (call on that loop only).
    func readBuffer(for loop: EventLoop) -> UnsafeMutableRawBufferPointer {
        perLoop[ObjectIdentifier(loop)]!.buffer
    }

    /// Connections living on `loop` (call on that loop only).
    func connections(on loop: EventLoop) -> [ServerConnection] {
        Array(perLoop[ObjectIdentifier(loop)]!.connections.values)
    }

    func connectionOpened(_ c: ServerConnection) {
        perLoop[ObjectIdentifier(c.loop)]!.connections[ObjectIdentifier(c)] = c
        openConnections.add(1, ordering: .relaxed)
    }

    func connectionClosed(_ c: ServerConnection) {
        if perLoop[ObjectIdentifier(c.loop)]!.connections.removeValue(forKey: ObjectIdentifier(c)) != nil {
            openConnections.subtract(1, ordering: .relaxed)
        }
    }
}
