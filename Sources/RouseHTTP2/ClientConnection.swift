import CNghttp2
import Logging
import RouseEventLoop
import RouseSystem

/// Per-stream state of a client request (loop-confined).
final class ClientStream {
    let id: Int32
    let completion: @Sendable (HTTP2ClientResult) -> Void
    var requestBody: [UInt8]
    var requestOffset = 0
    var status = 0
    var headers: [HTTP2Header] = []
    var body: [UInt8] = []
    var complete = false

    init(id: Int32, body: [UInt8], completion: @escaping @Sendable (HTTP2ClientResult) -> Void) {
        self.id = id
        self.requestBody = body
        self.completion = completion
    }
}

/// The client connection: nghttp2 client session over the shared connection machinery. Loop-confined.
final class ClientConnection: H2Connection {
    let configuration: HTTP2ClientConfiguration
    let events: @Sendable (HTTP2ClientEvent) -> Void
    let ready: ReadySignal
    private(set) var isReady = false
    var streams: [Int32: ClientStream] = [:]
    /// Set by a received GOAWAY: streams above it were not processed; no new streams may start.
    var goAwayLastStreamID: Int32?
    private var pingSentAt: [UInt64: UInt64] = [:]
    private var pingCounter: UInt64 = 0
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
    /// `configuration.keptResponseHeaders` as bytes, compared without making strings.
    let keptResponseHeaders: [[UInt8]]?

    init(
        loop: EventLoop, transport: Transport, logger: Logger, connecting: Bool,
        configuration: HTTP2ClientConfiguration, events: @escaping @Sendable (HTTP2ClientEvent) -> Void,
        ready: ReadySignal
    ) {
        self.configuration = configuration
        self.events = events
        self.ready = ready
        keptResponseHeaders = configuration.keptResponseHeaders?.map { Array($0.utf8) }
        super.init(loop: loop, transport: transport, logger: logger, connecting: connecting)
    }

    deinit {
        buffer.deallocate()
    }

    override var readBuffer: UnsafeMutableRawBufferPointer { buffer }

    override func startSession() -> Bool {
        var s: OpaquePointer?
        let rv = nghttp2_session_client_new(
            &s, ClientCallbacks.shared.callbacks, Unmanaged.passUnretained(self).toOpaque())
        guard rv == 0, let s else { return false }
        session = s
        var settings = configuration.settings
        settings.headerTableSize = 4096
        submitSettings(settings)
        // Enable push is off for clients: SETTINGS_ENABLE_PUSH 0.
        var noPush = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0)
        _ = nghttp2_submit_settings(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), &noPush, 1)
        return true
    }

    /// The server's first SETTINGS arrived: the connection is usable.
    func remoteSettingsReceived() {
        guard let session else { return }
        let limit = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        if !isReady {
            isReady = true
            ready.signal(failure: nil)
        }
        events(.settings(maxConcurrentStreams: limit))
    }

    func submit(_ request: HTTP2ClientRequest, completion: @escaping @Sendable (HTTP2ClientResult) -> Void) {
        loop.assertInLoop()
        guard phase == .active, let session, goAwayLastStreamID == nil else {
            completion(.notProcessed(reason: phase == .closed ? "connection closed" : "connection is going away"))
            return
        }
        var all = [
            HTTP2Header(":method", request.method), HTTP2Header(":scheme", request.scheme),
            HTTP2Header(":authority", request.authority), HTTP2Header(":path", request.path, neverIndex: true),
        ]
        all.append(contentsOf: request.headers)
        let hasBody = !request.body.isEmpty
        let id = withNGHTTP2Headers(all) { nva, count -> Int32 in
            if hasBody {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil), read_callback: ClientCallbacks.readRequestBody)
                return nghttp2_submit_request(session, nil, nva, count, &provider, nil)
            }
            return nghttp2_submit_request(session, nil, nva, count, nil, nil)
        }
        guard id > 0 else {
            let reason = String(cString: nghttp2_strerror(id))
            completion(.notProcessed(reason: "nghttp2_submit_request: \(reason)"))
            return
        }
        streams[id] = ClientStream(id: id, body: request.body, completion: completion)
        flushAfterQueuedWork()
    }

    func sendPing() {
        loop.assertInLoop()
        guard phase == .active, let session else { return }
        pingCounter += 1
        var opaque = pingCounter.bigEndian
        pingSentAt[pingCounter] = loop.now
        withUnsafeBytes(of: &opaque) { raw in
            _ = nghttp2_submit_ping(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), raw.bindMemory(to: UInt8.self).baseAddress)
        }
        flushSoon()
    }

    func pingAcknowledged(_ opaque: UInt64) {
        guard let sent = pingSentAt.removeValue(forKey: opaque) else { return }
        events(.pingAcknowledged(rtt: .nanoseconds(Int64(loop.now &- sent))))
    }

    func resetStream(_ id: Int32, code: HTTP2ErrorCode) {
        loop.assertInLoop()
        guard phase == .active, let session else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, code.rawValue)
        flushSoon()
    }

    func goAwayReceived(code: HTTP2ErrorCode, lastStreamID: Int32, debugData: [UInt8]) {
        goAwayLastStreamID = min(goAwayLastStreamID ?? .max, lastStreamID)
        events(.goAway(code: code, lastStreamID: lastStreamID, debugData: debugData))
    }

    func streamClosed(_ id: Int32, code: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        if stream.complete && code == 0 {
            stream.completion(.response(status: stream.status, headers: stream.headers, body: stream.body))
        } else if code == HTTP2ErrorCode.refusedStream.rawValue {
            stream.completion(.notProcessed(reason: "REFUSED_STREAM"))
        } else if let last = goAwayLastStreamID, id > last {
            stream.completion(.notProcessed(reason: "stream \(id) above GOAWAY last-stream-id \(last)"))
        } else if stream.complete {
            // A full response arrived and then the stream was reset: the response stands.
            stream.completion(.response(status: stream.status, headers: stream.headers, body: stream.body))
        } else {
            let c = HTTP2ErrorCode(rawValue: code)
            stream.completion(.failed(reason: "stream reset: \(c)", code: c))
        }
    }

    func shutdown() {
        loop.assertInLoop()
        guard phase == .active, let session else {
            close(reason: "closed by the client")
            return
        }
        _ = nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
        closeAfterFlush = true
        flush()
    }

    override func didClose(reason: String) {
        if !isReady { ready.signal(failure: reason) }
        let pending = streams
        streams.removeAll()
        for (id, stream) in pending.sorted(by: { $0.key < $1.key }) {
            if let last = goAwayLastStreamID, id > last {
                stream.completion(.notProcessed(reason: "stream \(id) above GOAWAY last-stream-id \(last)"))
            } else if stream.complete {
                stream.completion(.response(status: stream.status, headers: stream.headers, body: stream.body))
            } else {
                stream.completion(.failed(reason: "connection lost: \(reason)", code: nil))
            }
        }
        if isReady { events(.closed(reason: reason)) }
    }
}
