import RouseEventLoop

/// Application logic for one connection. The server creates one per connection with its factory; every call
/// happens on the connection's event-loop thread, so a handler may keep per-connection state without locks.
public protocol HTTP2ConnectionHandler: AnyObject {
    /// A complete request (headers, body, trailers) arrived. Answer through `stream`, now or later, from any thread.
    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream)
    /// The connection is gone (closed by either side, reset, or shut down).
    func connectionClosed()
    /// A stream closed (answered in full, or reset by either side) while the connection lives on. Long-lived
    /// streaming responses learn here that their peer went away. Optional: the default does nothing.
    func streamClosed(_ streamID: Int32)
}

extension HTTP2ConnectionHandler {
    /// Does nothing: most handlers only care about complete requests.
    public func streamClosed(_ streamID: Int32) {}
}

/// Makes the handler for a new connection, given what is known about it and a handle to control it.
public typealias HTTP2HandlerFactory =
    @Sendable (HTTP2ConnectionInfo, HTTP2Connection) -> any HTTP2ConnectionHandler

/// A handle to one server connection, usable from any thread. Operations on a closed connection do nothing.
public struct HTTP2Connection: Sendable {
    let ref: ConnectionRef

    /// The event loop the connection lives on (for timers and hops).
    public var eventLoop: EventLoop { ref.loop }

    /// Sends GOAWAY with `code`, `lastStreamID` (default: the last stream the server has seen) and optional debug
    /// data (APNs puts `{"reason":"…"}` there). With `.noError` the connection drains its open streams first;
    /// otherwise it closes once the frame is written.
    public func goAway(code: HTTP2ErrorCode, lastStreamID: Int32? = nil, debugData: [UInt8] = []) {
        ref.run { $0.goAway(code: code, lastStreamID: lastStreamID, debugData: debugData) }
    }

    /// Changes SETTINGS_MAX_CONCURRENT_STREAMS mid-connection.
    public func setMaxConcurrentStreams(_ value: UInt32) {
        ref.run { $0.setMaxConcurrentStreams(value) }
    }

    /// The peer proved who it is (a valid provider token, a device credential): the authentication deadline
    /// (`authenticationTimeout`, counted from accept) no longer applies.
    public func markAuthenticated() {
        ref.run { $0.markAuthenticated() }
    }

    /// Closes the TCP connection with a reset (RST), without any HTTP/2 goodbye.
    public func resetTCP() {
        ref.run { $0.resetTCP() }
    }

    /// Stops reading and writing on the connection (PINGs included) until the peer gives up or the server stops.
    public func blackhole() {
        ref.run { $0.blackhole() }
    }

    /// Runs `body` on the connection's loop after `delay`.
    public func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) {
        let loop = ref.loop
        loop.execute { loop.schedule(after: delay, body) }
    }
}

/// A handle to one request stream, usable from any thread. Operations on a finished stream do nothing.
public struct HTTP2Stream: Sendable {
    let ref: ConnectionRef
    /// The stream's id.
    public let id: Int32

    /// The connection the stream belongs to.
    public var connection: HTTP2Connection { HTTP2Connection(ref: ref) }

    /// Sends a complete response.
    public func respond(status: Int, headers: [HTTP2Header] = [], body: [UInt8] = [], trailers: [HTTP2Header] = []) {
        let id = id
        // On the loop already (a handler answering in `handleRequest`): no closure to allocate and call.
        if ref.loop.inLoop {
            ref.connection?.respond(streamID: id, status: status, headers: headers, body: body, trailers: trailers)
            return
        }
        ref.run { $0.respond(streamID: id, status: status, headers: headers, body: body, trailers: trailers) }
    }

    /// Starts a streaming response: headers now, body with `write`, end with `finish`.
    public func sendHead(status: Int, headers: [HTTP2Header] = []) {
        let id = id
        ref.run { $0.sendHead(streamID: id, status: status, headers: headers) }
    }

    /// Appends body bytes to a streaming response.
    public func write(_ bytes: [UInt8]) {
        let id = id
        ref.run { $0.write(streamID: id, bytes: bytes) }
    }

    /// Ends a streaming response, with optional trailers.
    public func finish(trailers: [HTTP2Header] = []) {
        let id = id
        ref.run { $0.finish(streamID: id, trailers: trailers) }
    }

    /// Resets the stream (RST_STREAM) with `code`.
    public func reset(_ code: HTTP2ErrorCode) {
        let id = id
        ref.run { $0.resetStream(streamID: id, code: code) }
    }
}

/// Shared reference from handles to a loop-confined connection.
final class ConnectionRef: @unchecked Sendable {  // `connection` is read and written only on `loop`'s thread.
    let loop: EventLoop
    weak var connection: ServerConnection?

    init(loop: EventLoop) {
        self.loop = loop
    }

    func run(_ body: @escaping (ServerConnection) -> Void) {
        if loop.inLoop {
            if let connection { body(connection) }
            return
        }
        let box = UncheckedBox(body)
        loop.execute { [self] in
            if let connection { box.value(connection) }
        }
    }
}

/// Carries a non-Sendable value to the loop thread that owns what it touches.
struct UncheckedBox<T>: @unchecked Sendable {  // used only to hop a closure onto its owning loop.
    let value: T
    init(_ value: T) { self.value = value }
}
