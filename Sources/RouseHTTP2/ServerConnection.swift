import CNghttp2
import CRouseShim
import Glibc
import Logging
import RouseSystem

/// One accepted connection: transport (TLS or h2c) + nghttp2 server session + the application's handler.
/// Loop-confined: every method runs on `loop`'s thread.
final class ServerConnection: H2Connection {
    let info: HTTP2ConnectionInfo
    let shared: ServerShared
    let ref: ConnectionRef
    var handler: (any HTTP2ConnectionHandler)?
    var streams: [Int32: ServerStream] = [:]
    /// The stream whose header block is being decoded (saves a lookup per header).
    var headerStream: ServerStream?
    private var idleTimer: UInt64?
    /// Streams above this id arrived after our GOAWAY: they are never handed to the application.
    var goAwayLastStreamID: Int32 = .max
    var rapidReset: RapidResetGuard
    /// True while the handler factory runs; limits set then go into the first SETTINGS frame.
    private var startingSession = false
    private var initialMaxConcurrentStreams: UInt32?

    init(fd: Int32, info: HTTP2ConnectionInfo, loop: EventLoop, shared: ServerShared) throws {
        self.info = info
        self.shared = shared
        self.ref = ConnectionRef(loop: loop)
        self.rapidReset = RapidResetGuard(
            burst: shared.configuration.streamResetBurst, ratePerSecond: shared.configuration.streamResetRate)
        var logger = shared.logger
        logger[metadataKey: "conn-id"] = "\(info.id)"
        super.init(loop: loop, transport: try Transport(fd: fd, tls: shared.tls), logger: logger, connecting: false)
        ref.connection = self
    }

    override var readBuffer: UnsafeMutableRawBufferPointer { shared.readBuffer(for: loop) }

    /// Registers the socket and starts the TLS handshake (or the HTTP/2 session for h2c).
    func start() throws {
        armIdleTimer()
        loop.schedule(after: shared.configuration.handshakeTimeout) { [weak self] in
            guard let self, self.phase == .handshaking || self.phase == .connecting else { return }
            self.close(reason: "handshake timeout")
        }
        try register()
    }

    override func startSession() -> Bool {
        var s: OpaquePointer?
        let rv = nghttp2_session_server_new2(
            &s, ServerCallbacks.shared.callbacks, Unmanaged.passUnretained(self).toOpaque(), shared.option)
        guard rv == 0, let s else { return false }
        session = s
        var connectionInfo = info
        connectionInfo.tlsVersion = transport.tlsVersion
        connectionInfo.peerCertificate = transport.peerCertificate()
        // The handler first: a limit it sets while it is made (the one-stream-until-token rule) goes into the
        // first SETTINGS frame, so the peer's first flight is already held to it.
        startingSession = true
        handler = shared.factory(connectionInfo, HTTP2Connection(ref: ref))
        startingSession = false
        var settings = shared.configuration.settings
        if let initialMaxConcurrentStreams { settings.maxConcurrentStreams = initialMaxConcurrentStreams }
        submitSettings(settings)
        return true
    }

    override var servesWithoutALPN: Bool { true }

    override var awaitsPrefaceBeforeSending: Bool { transport.negotiatedProtocol != "h2" }

    override func refuseNonHTTP2() {
        let body = "This server speaks HTTP/2 only (RFC 9113); send the HTTP/2 connection preface.\n"
        let response =
            "HTTP/1.1 505 HTTP Version Not Supported\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
        // Best effort, once: the socket has room for a few hundred bytes on a fresh connection.
        _ = try? Array(response.utf8).withUnsafeBytes { try transport.write($0) }
        super.refuseNonHTTP2()
    }

    // MARK: idle

    private func armIdleTimer() {
        guard let timeout = shared.configuration.idleTimeout else { return }
        idleTimer = loop.schedule(after: timeout) { [weak self] in self?.idleCheck() }
    }

    private func idleCheck() {
        guard phase != .closed, let timeout = shared.configuration.idleTimeout else { return }
        let idleFor = MonotonicClock.now() &- lastActivity
        if idleFor >= timeout.nanoseconds && streams.isEmpty {
            logger.debug("idle timeout")
            if phase == .active {
                goAway(code: .noError, lastStreamID: nil, debugData: shared.configuration.idleGoAwayDebugData)
                closeAfterFlush = true
                flush()
            } else {
                close(reason: "idle")
            }
            return
        }
        let remaining = timeout.nanoseconds &- min(idleFor, timeout.nanoseconds)
        idleTimer = loop.schedule(after: .nanoseconds(Int64(max(remaining, 1_000_000)))) { [weak self] in
            self?.idleCheck()
        }
    }

    // MARK: close

    override func didClose(reason: String) {
        if let idleTimer { loop.cancelTimer(idleTimer) }
        streams.removeAll()
        let h = handler
        handler = nil
        h?.connectionClosed()
        shared.connectionClosed(self)
    }

    // MARK: graceful shutdown (server stop)

    func beginGracefulShutdown() {
        switch phase {
        case .active:
            goAway(code: .noError, lastStreamID: nil, debugData: shared.configuration.shutdownGoAwayDebugData)
        case .connecting, .handshaking, .blackholed:
            close(reason: "server shutdown")
        case .closed:
            break
        }
    }

    // MARK: application actions (all on the loop)

    func goAway(code: HTTP2ErrorCode, lastStreamID: Int32?, debugData: [UInt8]) {
        guard phase == .active, let session else { return }
        let last = lastStreamID ?? nghttp2_session_get_last_proc_stream_id(session)
        goAwayLastStreamID = min(goAwayLastStreamID, last)
        _ = debugData.withUnsafeBufferPointer { d in
            nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, code.rawValue, d.baseAddress, d.count)
        }
        if code != .noError { closeAfterFlush = true }
        // Streams above `last` will never be answered; drop them so the connection can finish.
        for (id, _) in streams where id > last {
            streams[id] = nil
        }
        flushSoon()
    }

    func setMaxConcurrentStreams(_ value: UInt32) {
        if startingSession {
            initialMaxConcurrentStreams = value
            return
        }
        guard phase == .active else { return }
        var settings = shared.configuration.settings
        settings.maxConcurrentStreams = value
        submitSettings(settings)
        flushSoon()
    }

    func respond(streamID: Int32, status: Int, headers: [HTTP2Header], body: [UInt8], trailers: [HTTP2Header]) {
        guard let stream = streams[streamID], !stream.responseStarted else { return }
        stream.responseBody = body
        stream.responseFinished = true
        stream.responseTrailers = trailers
        submitResponse(stream, status: status, headers: headers, withBody: !body.isEmpty || !trailers.isEmpty)
    }

    func sendHead(streamID: Int32, status: Int, headers: [HTTP2Header]) {
        guard let stream = streams[streamID], !stream.responseStarted else { return }
        submitResponse(stream, status: status, headers: headers, withBody: true)
    }

    func write(streamID: Int32, bytes: [UInt8]) {
        guard let stream = streams[streamID], stream.responseStarted, !stream.responseFinished else { return }
        if stream.responseOffset > 0 && stream.responseOffset == stream.responseBody.count {
            stream.responseBody.removeAll(keepingCapacity: true)
            stream.responseOffset = 0
        }
        stream.responseBody.append(contentsOf: bytes)
        resumeData(stream)
    }

    func finish(streamID: Int32, trailers: [HTTP2Header]) {
        guard let stream = streams[streamID], stream.responseStarted, !stream.responseFinished else { return }
        stream.responseFinished = true
        stream.responseTrailers = trailers
        resumeData(stream)
    }

    func resetStream(streamID: Int32, code: HTTP2ErrorCode) {
        guard phase == .active, let session, streams[streamID] != nil else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, code.rawValue)
        flushSoon()
    }

    private func resumeData(_ stream: ServerStream) {
        guard let session, stream.dataDeferred else { return }
        stream.dataDeferred = false
        _ = nghttp2_session_resume_data(session, stream.id)
        flushSoon()
    }

    private func submitResponse(_ stream: ServerStream, status: Int, headers: [HTTP2Header], withBody: Bool) {
        guard phase == .active, let session else { return }
        stream.responseStarted = true
        var all = [HTTP2Header(":status", String(status))]
        all.append(contentsOf: headers)
        let rv = withNGHTTP2Headers(all) { nva, count -> Int32 in
            if withBody {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil), read_callback: ServerCallbacks.readResponseBody)
                return nghttp2_submit_response(session, stream.id, nva, count, &provider)
            }
            return nghttp2_submit_response(session, stream.id, nva, count, nil)
        }
        if rv != 0 {
            logger.debug("submit_response failed", metadata: ["stream": "\(stream.id)", "rv": "\(rv)"])
        }
        flushSoon()
    }

    // MARK: request dispatch (called from nghttp2 callbacks)

    func dispatch(_ stream: ServerStream) {
        guard !stream.dispatched else { return }
        stream.dispatched = true
        if stream.id > goAwayLastStreamID { return }
        if stream.headerListTooLarge {
            respond(streamID: stream.id, status: 431, headers: [], body: [], trailers: [])
            return
        }
        let request = HTTP2Request(
            method: stream.method, path: stream.path, scheme: stream.scheme, authority: stream.authority,
            headers: stream.headers, duplicatePseudoHeaders: stream.duplicatePseudo, body: stream.body,
            bodyTruncated: stream.bodyTruncated, bodyLength: stream.bodyLength, trailers: stream.trailers,
            streamID: stream.id)
        stream.body = []
        handler?.handleRequest(request, stream: HTTP2Stream(ref: ref, id: stream.id))
    }

    /// RST_STREAM received: charge the rapid-reset budget unless it only closes a stream we already answered
    /// in full (libcurl 7.88 does that after every response). Returns false when the budget is exhausted.
    func streamResetReceived(_ streamID: Int32) -> Bool {
        let harmless: Bool
        if let stream = streams[streamID] {
            harmless = stream.responseFinished && stream.responseOffset >= stream.responseBody.count
        } else {
            harmless = rapidReset.consumeCompleted(streamID)
        }
        if harmless { return true }
        return rapidReset.charge(now: MonotonicClock.now())
    }
}
