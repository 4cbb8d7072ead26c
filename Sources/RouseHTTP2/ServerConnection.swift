import CNghttp2
import CRouseShim
import Glibc
import Logging
import RouseSystem

/// One accepted connection: transport (TLS or h2c) + nghttp2 server session + the application's handler.
/// Loop-confined: every method runs on `loop`'s thread.
final class ServerConnection: EventLoopFDHandler {
    enum Phase {
        case handshaking
        case active
        case blackholed
        case closed
    }

    let info: HTTP2ConnectionInfo
    let loop: EventLoop
    let transport: Transport
    let shared: ServerShared
    let ref: ConnectionRef
    var logger: Logger
    private(set) var phase = Phase.handshaking
    private var session: OpaquePointer?
    var handler: (any HTTP2ConnectionHandler)?
    var streams: [Int32: ServerStream] = [:]
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var writeArmed = false
    private var lastActivity = MonotonicClock.now()
    private var idleTimer: UInt64?
    /// Close once the output is written (a GOAWAY with an error, or the idle GOAWAY, was sent).
    var closeAfterFlush = false
    /// Streams above this id arrived after our GOAWAY: they are never handed to the application.
    var goAwayLastStreamID: Int32 = .max
    var rapidReset: RapidResetGuard
    private var inCallback = false
    private var flushPending = false

    init(fd: Int32, info: HTTP2ConnectionInfo, loop: EventLoop, shared: ServerShared) throws {
        self.info = info
        self.loop = loop
        self.shared = shared
        self.transport = try Transport(fd: fd, tls: shared.tls)
        self.ref = ConnectionRef(loop: loop)
        self.rapidReset = RapidResetGuard(
            burst: shared.configuration.streamResetBurst, ratePerSecond: shared.configuration.streamResetRate)
        var logger = shared.logger
        logger[metadataKey: "conn-id"] = "\(info.id)"
        self.logger = logger
        ref.connection = self
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// Registers the socket and starts the TLS handshake (or the HTTP/2 session for h2c).
    func start() throws {
        try loop.register(transport.fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue, handler: self)
        armIdleTimer()
        if transport.isTLS {
            advanceHandshake()
        } else {
            startSession()
        }
    }

    // MARK: events

    func handleEvents(_ events: UInt32) {
        if phase == .closed { return }
        if phase == .blackholed {
            if events & (EPOLLHUP.rawValue | EPOLLRDHUP.rawValue | EPOLLERR.rawValue) != 0 {
                close(reason: "peer gone")
            }
            return
        }
        lastActivity = MonotonicClock.now()
        if phase == .handshaking {
            advanceHandshake()
            return
        }
        if events & EPOLLOUT.rawValue != 0 { flush() }
        if phase == .active && events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { readAll() }
        if phase == .active && events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0
            && events & EPOLLIN.rawValue == 0
        {
            close(reason: "peer closed")
        }
    }

    private func advanceHandshake() {
        do {
            switch try transport.handshake() {
            case .done:
                guard transport.negotiatedProtocol == "h2" else {
                    close(reason: "client did not negotiate h2 (ALPN)")
                    return
                }
                startSession()
            case .wantRead:
                setWriteInterest(false)
            case .wantWrite:
                setWriteInterest(true)
            }
        } catch {
            logger.debug("TLS handshake failed", metadata: ["error": "\(error)"])
            close(reason: "handshake failed")
        }
    }

    private func startSession() {
        var s: OpaquePointer?
        let rv = nghttp2_session_server_new2(
            &s, ServerCallbacks.shared.callbacks, Unmanaged.passUnretained(self).toOpaque(),
            shared.option)
        guard rv == 0, let s else {
            close(reason: "nghttp2_session_server_new2 failed")
            return
        }
        session = s
        phase = .active
        var connectionInfo = info
        connectionInfo.tlsVersion = transport.tlsVersion
        connectionInfo.peerCertificate = transport.peerCertificate()
        handler = shared.factory(connectionInfo, HTTP2Connection(ref: ref))
        submitSettings(shared.configuration.settings)
        flush()
        // Data may already be buffered inside TLS.
        readAll()
    }

    private func submitSettings(_ settings: HTTP2Settings) {
        guard let session else { return }
        let entries: [nghttp2_settings_entry] = [
            .init(settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue), value: settings.headerTableSize),
            .init(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: settings.maxConcurrentStreams),
            .init(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: settings.initialWindowSize),
            .init(settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue), value: settings.maxFrameSize),
            .init(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: settings.maxHeaderListSize),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), entries, entries.count)
    }

    private func readAll() {
        guard let session else { return }
        let buffer = shared.readBuffer(for: loop)
        var budget = 1 << 20  // fairness: at most 1 MiB per wake-up, then let other connections run
        while phase == .active && budget > 0 {
            let result: Sys.IOResult
            do {
                result = try transport.read(into: buffer)
            } catch {
                logger.debug("read failed", metadata: ["error": "\(error)"])
                close(reason: "read error")
                return
            }
            switch result {
            case .wouldBlock:
                budget = 0
            case .endOfFile:
                close(reason: "peer closed")
                return
            case .bytes(let n):
                budget -= n
                inCallback = true
                let rv = nghttp2_session_mem_recv(
                    session, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), n)
                inCallback = false
                if rv < 0 {
                    logger.debug(
                        "HTTP/2 protocol error",
                        metadata: ["error": "\(String(cString: nghttp2_strerror(Int32(rv))))"])
                    // nghttp2 queued a GOAWAY for most errors; send it, then close.
                    closeAfterFlush = true
                    flush()
                    if phase != .closed { close(reason: "protocol error") }
                    return
                }
            }
        }
        flush()
    }

    // MARK: output

    /// Writes everything nghttp2 has to send; arms EPOLLOUT when the socket is full.
    func flush() {
        if inCallback {
            flushPending = true
            return
        }
        guard phase == .active, let session else { return }
        flushPending = false
        while true {
            if output.count - outputOffset < 65536 {
                var chunk: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(session, &chunk)
                if n < 0 {
                    close(reason: "nghttp2 send error")
                    return
                }
                if n > 0, let chunk {
                    if outputOffset > 0 && outputOffset == output.count {
                        output.removeAll(keepingCapacity: true)
                        outputOffset = 0
                    }
                    output.append(contentsOf: UnsafeBufferPointer(start: chunk, count: n))
                    continue
                }
            }
            if outputOffset == output.count { break }
            let result: Sys.IOResult
            do {
                result = try output.withUnsafeBytes { raw in
                    try transport.write(UnsafeRawBufferPointer(rebasing: raw[outputOffset...]))
                }
            } catch {
                logger.debug("write failed", metadata: ["error": "\(error)"])
                close(reason: "write error")
                return
            }
            switch result {
            case .bytes(let n):
                outputOffset += n
                if outputOffset == output.count {
                    output.removeAll(keepingCapacity: output.capacity <= 1 << 17)
                    outputOffset = 0
                }
            case .wouldBlock, .endOfFile:
                setWriteInterest(true)
                return
            }
        }
        setWriteInterest(false)
        if closeAfterFlush || (nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0) {
            close(reason: closeAfterFlush ? "GOAWAY sent" : "session finished")
        }
    }

    private func setWriteInterest(_ on: Bool) {
        guard on != writeArmed, phase != .closed else { return }
        writeArmed = on
        loop.modify(
            transport.fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (on ? EPOLLOUT.rawValue : 0))
    }

    /// Flushes at the end of the current callback batch, or now.
    func flushSoon() {
        if inCallback { flushPending = true } else { flush() }
    }

    func callbackBatchEnded() {
        if flushPending { flush() }
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

    func close(reason: String) {
        guard phase != .closed else { return }
        phase = .closed
        logger.trace("connection closed", metadata: ["reason": "\(reason)"])
        if let idleTimer { loop.cancelTimer(idleTimer) }
        loop.unregister(transport.fd)
        Sys.close(transport.fd)
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
        case .handshaking, .blackholed:
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
        guard phase == .active else { return }
        var settings = shared.configuration.settings
        settings.maxConcurrentStreams = value
        submitSettings(settings)
        flushSoon()
    }

    func resetTCP() {
        guard phase != .closed else { return }
        try? Sys.setLinger(transport.fd, onOff: 1, seconds: 0)
        close(reason: "reset on request")
    }

    func blackhole() {
        guard phase == .active || phase == .handshaking else { return }
        phase = .blackholed
        output.removeAll()
        outputOffset = 0
        loop.modify(transport.fd, events: EPOLLRDHUP.rawValue)
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
