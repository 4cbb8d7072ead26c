import CNghttp2
import CRouseSys
import Glibc
import Logging
import RouseClock
import RouseEventLoop
import RouseSystem
import Synchronization

/// One accepted connection: transport (TLS or h2c) + nghttp2 server session + the application's handler.
/// Loop-confined: every method runs on `loop`'s thread.
final class ServerConnection: H2Connection {
    let info: HTTP2ConnectionInfo
    /// The peer's address without port (the per-address connection cap's key).
    let peerHost: String
    let shared: ServerShared
    let ref: ConnectionRef
    var handler: (any HTTP2ConnectionHandler)?
    var streams: [Int32: ServerStream] = [:]
    /// The stream whose header block is being decoded (saves a lookup per header).
    var headerStream: ServerStream?
    /// The previous request's header strings, reused when the next request repeats them.
    var headerStrings = HeaderStringCache()
    private var idleTimer: UInt64?
    private var requestTimer: UInt64?
    private var authenticationTimer: UInt64?
    /// Cancelled once the session starts: a finished handshake's deadline would still wake the loop 10 s later.
    private var handshakeTimer: UInt64?
    /// Set by the application once the peer proved who it is (cancels the authentication deadline).
    private(set) var authenticated = false
    /// Request header and body bytes held by streams not yet handed to the application.
    var bufferedRequestBytes = 0
    /// Streams above this id arrived after our GOAWAY: they are never handed to the application.
    var goAwayLastStreamID: Int32 = .max
    var rapidReset: RapidResetGuard
    /// True while the handler factory runs; limits set then go into the first SETTINGS frame.
    private var startingSession = false
    private var initialMaxConcurrentStreams: UInt32?
    /// HTTP/1.1 state when ALPN selected `http/1.1` (`nil`: HTTP/2; see ServerConnection+HTTP1.swift).
    var http1: HTTP1ServerState?

    init(fd: Int32, info: HTTP2ConnectionInfo, peerHost: String, loop: EventLoop, shared: ServerShared) throws {
        self.info = info
        self.peerHost = peerHost
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
        loop.assertInLoop()
        armIdleTimer()
        if let deadline = shared.configuration.authenticationTimeout {
            authenticationTimer = loop.schedule(after: deadline) { [weak self] in self?.authenticationDeadline() }
        }
        handshakeTimer = loop.schedule(after: shared.configuration.handshakeTimeout) { [weak self] in
            self?.handshakeTimer = nil
            guard let self, self.phase == .handshaking || self.phase == .connecting else { return }
            self.close(reason: "handshake timeout")
        }
        try register()
    }

    override func startSession() -> Bool {
        if let handshakeTimer { loop.cancelTimer(handshakeTimer) }
        handshakeTimer = nil
        var s: OpaquePointer?
        let rv = nghttp2_session_server_new3(
            &s, ServerCallbacks.shared.callbacks, Unmanaged.passUnretained(self).toOpaque(), shared.option,
            NGHTTP2Allocator.memory)
        guard rv == 0, let s else { return false }
        session = s
        sessionFromCountingAllocator = true
        NGHTTP2Allocator.sessionCreated()
        // The connection window is more than twice the request-buffer budget: bytes parked in unfinished requests
        // (at most the budget, given back when the application takes them) can never leave a client without
        // window, since nghttp2 returns window once half of it was consumed. Streams get their window back at once.
        let window = Int32(clamping: 2 * shared.configuration.maxBufferedRequestBytes + 65536)
        _ = nghttp2_session_set_local_window_size(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, window)
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

    override var servesHTTP11: Bool { shared.configuration.servesHTTP11 }

    override func startHTTP11() {
        if let handshakeTimer { loop.cancelTimer(handshakeTimer) }
        handshakeTimer = nil
        beginHTTP11()
    }

    override func readAll() {
        if http1 != nil { http1ReadAll() } else { super.readAll() }
    }

    override func flush() {
        if http1 != nil { http1Flush() } else { super.flush() }
    }

    /// A server holds many idle connections (device channels): one that once wrote a burst does not keep a buffer
    /// for it. 16 KiB holds a flush of a hundred ordinary responses.
    override var keptOutputCapacity: Int { Self.keptBufferCapacity }

    /// What an idle server connection keeps of a buffer a burst grew: its output buffer, a streaming response's body.
    static let keptBufferCapacity = 16 * 1024

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

    private var idleTimeout: Duration? { shared.configuration.idleTimeout }

    private func armIdleTimer() {
        guard let timeout = idleTimeout else { return }
        idleTimer = loop.schedule(after: timeout) { [weak self] in self?.idleCheck() }
    }

    private func idleCheck() {
        idleTimer = nil
        guard phase != .closed, let timeout = idleTimeout else { return }
        let idleFor = loop.now &- lastActivity
        guard idleFor >= timeout.wholeNanoseconds else {
            idleTimer = loop.schedule(after: .nanoseconds(Int64(timeout.wholeNanoseconds &- idleFor))) { [weak self] in
                self?.idleCheck()
            }
            return
        }
        guard streams.isEmpty else {
            // A stream is open (a long-lived response such as a device channel, whose liveness is the
            // application's: heartbeats and acks; half-open requests end at `requestTimeout`). Look again a whole
            // period later: a timer that re-armed for what is left of an expired period would fire every
            // millisecond for the rest of the connection's life.
            idleTimer = loop.schedule(after: timeout) { [weak self] in self?.idleCheck() }
            return
        }
        logger.debug("idle timeout")
        closeWithGoAway(reason: "idle")
    }

    /// The authentication deadline passed: a connection that never proved who it is goes, whatever it did.
    private func authenticationDeadline() {
        authenticationTimer = nil
        guard phase != .closed, !authenticated else { return }
        logger.debug("authentication timeout")
        shared.counters.authenticationTimeouts.add(1, ordering: .relaxed)
        closeWithGoAway(reason: "authentication timeout")
    }

    private func closeWithGoAway(reason: String) {
        if phase == .active {
            goAway(code: .noError, lastStreamID: nil, debugData: shared.configuration.idleGoAwayDebugData)
            closeAfterFlush = true
            flush()
        } else {
            close(reason: reason)
        }
    }

    /// The application vouches for the peer: the authentication deadline no longer applies.
    func markAuthenticated() {
        loop.assertInLoop()
        guard !authenticated else { return }
        authenticated = true
        if let authenticationTimer { loop.cancelTimer(authenticationTimer) }
        authenticationTimer = nil
    }

    // MARK: request budgets

    /// A request stream began (HEADERS): it must end within `requestTimeout`.
    func requestStarted(_ stream: ServerStream) {
        stream.openedAt = loop.now
        if requestTimer == nil, let timeout = shared.configuration.requestTimeout {
            requestTimer = loop.schedule(after: timeout) { [weak self] in self?.requestDeadlineCheck() }
        }
    }

    /// Resets every stream whose request did not end in time; re-arms for the oldest one left.
    private func requestDeadlineCheck() {
        requestTimer = nil
        guard phase == .active, let session, let timeout = shared.configuration.requestTimeout else { return }
        let now = loop.now
        var oldest: UInt64?
        for stream in streams.values where !stream.dispatched && !stream.refused {
            if now &- stream.openedAt >= timeout.wholeNanoseconds {
                stream.refused = true
                shared.counters.requestTimeouts.add(1, ordering: .relaxed)
                _ = nghttp2_submit_rst_stream(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, HTTP2ErrorCode.cancel.rawValue)
            } else {
                oldest = min(oldest ?? stream.openedAt, stream.openedAt)
            }
        }
        if let oldest {
            let wait = timeout.wholeNanoseconds &- (now &- oldest)
            requestTimer = loop.schedule(after: .nanoseconds(Int64(wait))) { [weak self] in
                self?.requestDeadlineCheck()
            }
        }
        flushSoon()
    }

    /// Charges `count` bytes of `stream`'s request to the connection's buffer budget; over budget, the stream is
    /// reset with REFUSED_STREAM (the client may retry it) and its buffers are dropped. Returns false then.
    func chargeRequestBytes(_ stream: ServerStream, _ count: Int) -> Bool {
        guard !stream.refused else { return false }
        if bufferedRequestBytes + count > shared.configuration.maxBufferedRequestBytes {
            refuse(stream, counter: shared.counters.streamsRefusedBufferBudget)
            return false
        }
        // The listener's budget, shared with the other loops: taken, then given back if it was over.
        let total = shared.bufferedRequestBytes.wrappingAdd(count, ordering: .relaxed).newValue
        if total > shared.configuration.maxListenerBufferedRequestBytes {
            shared.bufferedRequestBytes.wrappingSubtract(count, ordering: .relaxed)
            refuse(stream, counter: shared.counters.streamsRefusedListenerBuffer)
            return false
        }
        bufferedRequestBytes += count
        stream.bufferedBytes += count
        return true
    }

    private func refuse(_ stream: ServerStream, counter: borrowing Atomic<UInt64>) {
        guard let session else { return }
        stream.refused = true
        counter.add(1, ordering: .relaxed)
        releaseBuffers(stream)
        _ = nghttp2_submit_rst_stream(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, HTTP2ErrorCode.refusedStream.rawValue)
        flushSoon()
    }

    /// The stream's request left the buffer (handed over, refused or closed): give back its budget and its
    /// flow-control window, so the peer may send more.
    func releaseBuffers(_ stream: ServerStream) {
        bufferedRequestBytes -= stream.bufferedBytes
        shared.bufferedRequestBytes.wrappingSubtract(stream.bufferedBytes, ordering: .relaxed)
        stream.bufferedBytes = 0
        stream.headers = []
        consume(stream.body.count)
        stream.body = []
    }

    /// Returns `count` bytes of connection window to the peer (WINDOW_UPDATE once enough has been consumed); a
    /// stream's own window is given back when its bytes arrive.
    func consume(_ count: Int) {
        guard count > 0, let session else { return }
        _ = nghttp2_session_consume_connection(session, count)
    }

    // MARK: close

    override func didClose(reason: String) {
        if let idleTimer { loop.cancelTimer(idleTimer) }
        if let requestTimer { loop.cancelTimer(requestTimer) }
        if let authenticationTimer { loop.cancelTimer(authenticationTimer) }
        if let handshakeTimer { loop.cancelTimer(handshakeTimer) }
        // What the closed connection's streams still held leaves the listener's budget with them.
        shared.bufferedRequestBytes.wrappingSubtract(bufferedRequestBytes, ordering: .relaxed)
        bufferedRequestBytes = 0
        http1?.output = []
        streams.removeAll()
        let h = handler
        handler = nil
        h?.connectionClosed()
        shared.connectionClosed(self)
    }

    // MARK: graceful shutdown (server stop)

    func beginGracefulShutdown() {
        loop.assertInLoop()
        if http1 != nil { return http1Finish() }
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
        loop.assertInLoop()
        if http1 != nil { return http1Finish() }
        guard phase == .active, let session else { return }
        let last = lastStreamID ?? nghttp2_session_get_last_proc_stream_id(session)
        goAwayLastStreamID = min(goAwayLastStreamID, last)
        _ = debugData.withUnsafeBufferPointer { d in
            nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, code.rawValue, d.baseAddress, d.count)
        }
        if code != .noError { closeAfterFlush = true }
        // Streams above `last` will never be answered; drop them so the connection can finish (their buffers and
        // window go back, and the application forgets them).
        for (id, stream) in streams where id > last {
            releaseBuffers(stream)
            streams[id] = nil
            handler?.streamClosed(id)
        }
        flushSoon()
    }

    func setMaxConcurrentStreams(_ value: UInt32) {
        loop.assertInLoop()
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
        loop.assertInLoop()
        if http1 != nil { return http1Respond(streamID: streamID, status: status, headers: headers, body: body) }
        guard let stream = streams[streamID], !stream.responseStarted else { return }
        stream.responseBody = body
        stream.responseFinished = true
        stream.responseTrailers = trailers
        submitResponse(stream, status: status, headers: headers, withBody: !body.isEmpty || !trailers.isEmpty)
    }

    func sendHead(streamID: Int32, status: Int, headers: [HTTP2Header]) {
        loop.assertInLoop()
        if http1 != nil { return http1Head(streamID: streamID, status: status, headers: headers) }
        guard let stream = streams[streamID], !stream.responseStarted else { return }
        submitResponse(stream, status: status, headers: headers, withBody: true)
    }

    func write(streamID: Int32, bytes: [UInt8]) {
        loop.assertInLoop()
        if http1 != nil { return http1Write(streamID: streamID, bytes: bytes) }
        guard let stream = streams[streamID], stream.responseStarted, !stream.responseFinished else { return }
        if stream.responseOffset > 0 && stream.responseOffset == stream.responseBody.count {
            stream.responseBody.removeAll(keepingCapacity: true)
            stream.responseOffset = 0
        }
        stream.responseBody.append(contentsOf: bytes)
        resumeData(stream)
    }

    func finish(streamID: Int32, trailers: [HTTP2Header]) {
        loop.assertInLoop()
        if http1 != nil { return http1End(streamID: streamID) }
        guard let stream = streams[streamID], stream.responseStarted, !stream.responseFinished else { return }
        stream.responseFinished = true
        stream.responseTrailers = trailers
        resumeData(stream)
    }

    func resetStream(streamID: Int32, code: HTTP2ErrorCode) {
        loop.assertInLoop()
        if http1 != nil { return close(reason: "stream reset (HTTP/1.1: connection closed)") }
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
        // Three-digit statuses (all of HTTP's) go first without a new array; anything else as its decimal text.
        let threeDigits = (100...999).contains(status)
        let all = threeDigits ? headers : [HTTP2Header(":status", String(status))] + headers
        let rv = withNGHTTP2Headers(status: threeDigits ? status : nil, all) { nva, count -> Int32 in
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
        loop.assertInLoop()
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
        // The application owns the request now: its bytes leave this connection's budget and window.
        releaseBuffers(stream)
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
        return rapidReset.charge(now: loop.now)
    }
}
