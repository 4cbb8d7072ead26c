import CNghttp2
import FoundationEssentials
import Glibc
import Logging
import RouseEventLoop
import RouseSystem
import Synchronization

/// Where and how a client connects.
public struct HTTP2ClientConfiguration: Sendable {
    /// Host name or IP address.
    public var host: String
    public var port: UInt16
    /// TLS with ALPN h2; `nil` means h2c with prior knowledge.
    public var tls: TLSConfiguration?
    /// Deadline for TCP connect + TLS handshake + the server's first SETTINGS.
    public var connectTimeout: Duration = .seconds(10)
    /// Our SETTINGS (no push, a large window so responses are never stalled).
    public var settings: HTTP2Settings = {
        var s = HTTP2Settings()
        s.maxConcurrentStreams = 100
        s.initialWindowSize = 1 << 20
        s.maxHeaderListSize = 65536
        return s
    }()
    /// The response headers kept in `.response` (lowercase names), or nil for all. A bulk sender that reads one
    /// header sets it, so the others cost no strings (`:status` is always read).
    public var keptResponseHeaders: [String]?

    public init(host: String, port: UInt16, tls: TLSConfiguration? = TLSConfiguration()) {
        self.host = host
        self.port = port
        self.tls = tls
    }
}

/// A request as the client sends it.
public struct HTTP2ClientRequest: Sendable {
    public var method: String
    public var path: String
    public var authority: String
    public var scheme: String
    public var headers: [HTTP2Header]
    public var body: [UInt8]
    /// Fields shared with other requests, encoded once. When set, `method`, `scheme` and `authority` are the
    /// block's, `:path` is the block's prefix followed by `path`, and `headers` come after the block's own.
    public var shared: HTTP2HeaderBlock?

    public init(
        method: String = "POST", path: String, authority: String, scheme: String = "https", headers: [HTTP2Header] = [],
        body: [UInt8] = [], shared: HTTP2HeaderBlock? = nil
    ) {
        self.method = method
        self.path = path
        self.authority = authority
        self.scheme = scheme
        self.headers = headers
        self.body = body
        self.shared = shared
    }
}

/// How one request ended. Exactly one per request.
public enum HTTP2ClientResult: Sendable {
    /// A complete response.
    case response(status: Int, headers: [HTTP2Header], body: [UInt8])
    /// The server provably did not process the request: REFUSED_STREAM, a stream above a GOAWAY's last-stream-id,
    /// or never sent because the connection was already going away. Safe to send again elsewhere.
    case notProcessed(reason: String)
    /// The stream was reset with another code, or the connection died mid-request: processing unknown.
    case failed(reason: String, code: HTTP2ErrorCode?)
}

/// What the client learns about its connection.
public enum HTTP2ClientEvent: Sendable {
    /// The server's SETTINGS arrived (first time or changed): its stream limit now.
    case settings(maxConcurrentStreams: UInt32)
    /// GOAWAY received.
    case goAway(code: HTTP2ErrorCode, lastStreamID: Int32, debugData: [UInt8])
    /// A PING we sent was acknowledged after `rtt`.
    case pingAcknowledged(rtt: Duration)
    /// The connection is closed; no event follows.
    case closed(reason: String)
}

/// The client side of the HTTP/2 kernel: one connection, many concurrent streams, GOAWAY / REFUSED_STREAM /
/// SETTINGS visible to the caller, PINGs on demand. Usable from any thread; the work runs on its event loop.
public final class HTTP2Client: Sendable {
    private let loop: EventLoop
    private let box: UncheckedBox<ClientConnection>
    /// Local address of the connection (its source port tells connections apart).
    public let localAddress: String

    /// A connection failed before it was ready.
    public struct ConnectError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    private init(loop: EventLoop, connection: ClientConnection, localAddress: String) {
        self.loop = loop
        self.box = UncheckedBox(connection)
        self.localAddress = localAddress
    }

    /// Connects, completes TLS and waits for the server's SETTINGS, within `configuration.connectTimeout`.
    /// `events` is called on the loop thread for the connection's lifetime.
    public static func connect(
        _ configuration: HTTP2ClientConfiguration, on loop: EventLoop, logger: Logger = Logger(label: "rouse.h2client"),
        events: @escaping @Sendable (HTTP2ClientEvent) -> Void = { _ in }
    ) async throws -> HTTP2Client {
        let tls = try configuration.tls.map { c throws(TLSError) in try TLSContext(configuration: c, server: false) }
        let address = try await resolve(configuration.host, port: configuration.port)
        let fd = try Sys.socket(family: address.family, type: Int32(SOCK_STREAM.rawValue))
        try? Sys.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        let connected: Bool
        do {
            connected = try Sys.connect(fd, address)
        } catch {
            Sys.close(fd)
            throw ConnectError(description: "connect to \(address): \(error)")
        }
        let serverName = configuration.tls?.serverName ?? configuration.host
        let transport: Transport
        do {
            transport = try Transport(fd: fd, tls: tls, serverName: serverName)
        } catch {
            Sys.close(fd)
            throw error
        }
        let local = (try? Sys.localAddress(fd))?.description ?? ""
        let ready = ReadySignal()
        let connection = ClientConnection(
            loop: loop, transport: transport, logger: logger, connecting: !connected, configuration: configuration,
            events: events, ready: ready)
        let box = UncheckedBox(connection)
        loop.execute {
            do {
                try box.value.register()
            } catch {
                box.value.close(reason: "register: \(error)")
            }
        }
        let timeout = configuration.connectTimeout
        let timer = ConnectTimer()
        loop.execute {
            timer.id = loop.schedule(after: timeout) {
                if !box.value.isReady { box.value.close(reason: "connect timeout after \(timeout)") }
            }
        }
        if let failure = await ready.wait() {
            throw ConnectError(description: "\(address): \(failure)")
        }
        // Connected: the deadline goes, so an idle connection's loop does not wake for it later.
        loop.execute {
            if let id = timer.id { loop.cancelTimer(id) }
        }
        return HTTP2Client(loop: loop, connection: connection, localAddress: local)
    }

    /// Resolves `host` (numeric addresses directly, names with getaddrinfo off the caller's executor).
    static func resolve(_ host: String, port: UInt16) async throws -> SocketAddress {
        if let address = SocketAddress(ip: host, port: port) { return address }
        let name = host == "localhost" ? "127.0.0.1" : host
        if let address = SocketAddress(ip: name, port: port) { return address }
        return try await withCheckedThrowingContinuation { c in
            let resolve: @Sendable () -> Void = {
                switch Sys.resolveFirst(host: name, port: port) {
                case .success(let address): c.resume(returning: address)
                case .failure(let error):
                    c.resume(throwing: ConnectError(description: "cannot resolve \(host): \(error.reason)"))
                }
            }
            do {
                try Sys.startThread(name: "rouse-resolve", resolve)
            } catch {
                c.resume(throwing: ConnectError(description: "cannot resolve \(host): \(error)"))
            }
        }
    }

    /// Sends `request`; `completion` is called exactly once, on the loop thread.
    public func send(_ request: HTTP2ClientRequest, completion: @escaping @Sendable (HTTP2ClientResult) -> Void) {
        let box = self.box
        if loop.inLoop {
            box.value.submit(request, completion: completion)
        } else {
            loop.execute { box.value.submit(request, completion: completion) }
        }
    }

    /// Sends `request` and waits for its result.
    public func send(_ request: HTTP2ClientRequest) async -> HTTP2ClientResult {
        await withCheckedContinuation { c in send(request) { c.resume(returning: $0) } }
    }

    /// Sends a PING; the acknowledgement arrives as `.pingAcknowledged`.
    public func ping() {
        let box = self.box
        loop.execute { box.value.sendPing() }
    }

    /// Sends RST_STREAM for a stream the client opened (tests use this to play a misbehaving client).
    public func resetStream(_ id: Int32, code: HTTP2ErrorCode) {
        let box = self.box
        loop.execute { box.value.resetStream(id, code: code) }
    }

    /// Closes the connection (GOAWAY NO_ERROR, then the socket); pending requests fail with `.failed`.
    public func close() {
        let box = self.box
        loop.execute { box.value.shutdown() }
    }

    /// Closes the socket without any HTTP/2 goodbye.
    public func abort() {
        let box = self.box
        loop.execute { box.value.close(reason: "aborted by the client") }
    }
}

/// One-shot readiness result shared between `connect` and the loop.
final class ReadySignal: Sendable {
    private let state = Mutex<(done: Bool, failure: String?, waiter: CheckedContinuation<String?, Never>?)>(
        (false, nil, nil))

    func signal(failure: String?) {
        let waiter = state.withLock { s -> CheckedContinuation<String?, Never>? in
            if s.done { return nil }
            s.done = true
            s.failure = failure
            let w = s.waiter
            s.waiter = nil
            return w
        }
        waiter?.resume(returning: failure)
    }

    func wait() async -> String? {
        await withCheckedContinuation { c in
            let result = state.withLock { s -> String?? in
                if s.done { return .some(s.failure) }
                s.waiter = c
                return .none
            }
            if let result { c.resume(returning: result) }
        }
    }
}

/// The connect deadline's timer, read and written on the connection's loop only.
final class ConnectTimer: @unchecked Sendable {  // `id` is touched on the loop's thread only.
    var id: UInt64?
}
