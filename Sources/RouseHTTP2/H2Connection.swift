import CNghttp2
import CRouseSys
import Glibc
import Logging
import RouseEventLoop
import RouseSystem

/// What server and client connections share: a socket on an event loop, the transport (TLS or h2c), an nghttp2
/// session fed with `mem_recv` and drained with `mem_send`, and write-interest bookkeeping. Subclasses create the
/// session (`startSession`) and react to close (`didClose`). Loop-confined.
class H2Connection: EventLoopFDHandler {
    enum Phase {
        case connecting
        case handshaking
        case active
        case blackholed
        case closed
    }

    let loop: EventLoop
    let transport: Transport
    var logger: Logger
    var phase: Phase
    var session: OpaquePointer?
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var writeArmed = false
    /// When bytes last came in, on the loop's clock (nanoseconds).
    var lastActivity: UInt64
    /// Close once the output is written (a GOAWAY with an error, or the idle GOAWAY, was sent).
    var closeAfterFlush = false
    private var inCallback = false
    private var flushPending = false
    /// A `flushAfterQueuedWork` job is on the loop's queue.
    private var flushQueued = false
    private var readingAfterWriteError = false
    /// Output is held until the peer's first bytes were read (see `awaitsPrefaceBeforeSending`).
    private var awaitingFirstBytes = false

    init(loop: EventLoop, transport: Transport, logger: Logger, connecting: Bool) {
        self.loop = loop
        self.transport = transport
        self.logger = logger
        self.phase = connecting ? .connecting : .handshaking
        self.lastActivity = loop.now
    }

    /// The session was made with `NGHTTP2Allocator.memory` (server sessions), which counts live sessions.
    var sessionFromCountingAllocator = false

    deinit {
        if let session {
            nghttp2_session_del(session)
            if sessionFromCountingAllocator { NGHTTP2Allocator.sessionDeleted() }
        }
    }

    // MARK: subclass hooks

    /// Creates `session` (server or client) and submits the first SETTINGS. Return false on failure.
    func startSession() -> Bool { false }

    /// The connection closed; release application state.
    func didClose(reason: String) {}

    /// The shared read buffer for this connection's loop.
    var readBuffer: UnsafeMutableRawBufferPointer { preconditionFailure("subclass provides a read buffer") }

    /// Whether a TLS peer that negotiated no ALPN protocol is served anyway. Servers say yes: APNs serves clients
    /// that offer no ALPN and then send the HTTP/2 preface (aioapns does), and a client that offered ALPN without
    /// `h2` was already refused in the handshake (`no_application_protocol`, see `TLSContext`). Clients say no:
    /// they offered `h2` and a server that ignores ALPN may not speak HTTP/2.
    var servesWithoutALPN: Bool { false }

    /// Whether a TLS peer that negotiated `http/1.1` is served (by `startHTTP11`) instead of closed.
    var servesHTTP11: Bool { false }

    /// Takes over a connection that negotiated `http/1.1` (phase is active, no nghttp2 session).
    func startHTTP11() {}

    /// The output buffer keeps its capacity once written out up to this size (no regrowth per batch); a larger one,
    /// grown by a burst, is freed.
    var keptOutputCapacity: Int { 1 << 17 }

    /// Whether the session's first frames wait until the peer's first bytes arrived (servers without ALPN h2).
    var awaitsPrefaceBeforeSending: Bool { false }

    // MARK: lifecycle

    /// Registers the socket and starts connecting, handshaking, or the session (h2c).
    func register() throws {
        loop.assertInLoop()
        let events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (phase == .connecting ? EPOLLOUT.rawValue : 0)
        writeArmed = phase == .connecting
        try loop.register(transport.fd, events: events, handler: self)
        if phase == .handshaking { afterConnect() }
    }

    func handleEvents(_ events: UInt32) {
        loop.assertInLoop()
        switch phase {
        case .closed:
            return
        case .blackholed:
            if events & (EPOLLHUP.rawValue | EPOLLRDHUP.rawValue | EPOLLERR.rawValue) != 0 {
                close(reason: "peer gone")
            }
            return
        case .connecting:
            let error = Sys.socketError(transport.fd)
            if error != 0 {
                close(reason: "connect failed: \(SystemError(call: "connect", errno: error))")
                return
            }
            if events & (EPOLLOUT.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) == 0 { return }
            phase = .handshaking
            afterConnect()
            return
        case .handshaking:
            lastActivity = loop.now
            advanceHandshake()
            return
        case .active:
            lastActivity = loop.now
            if events & EPOLLOUT.rawValue != 0 { flush() }
            if phase == .active && events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                readAll()
            }
            if phase == .active && events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0
                && events & EPOLLIN.rawValue == 0
            {
                close(reason: "peer closed")
            }
        }
    }

    private func afterConnect() {
        if transport.isTLS {
            advanceHandshake()
        } else {
            activate()
        }
    }

    private func advanceHandshake() {
        do {
            switch try transport.handshake() {
            case .done:
                switch transport.negotiatedProtocol {
                case "h2":
                    break
                case nil where servesWithoutALPN:
                    break
                case "http/1.1" where servesHTTP11:
                    phase = .active
                    startHTTP11()
                    return
                case let other:
                    close(reason: "peer did not negotiate h2 (ALPN: \(other ?? "none"))")
                    return
                }
                activate()
            case .wantRead:
                setWriteInterest(false)
            case .wantWrite:
                setWriteInterest(true)
            }
        } catch {
            logger.debug("TLS handshake failed", metadata: ["error": "\(error)"])
            close(reason: "TLS handshake failed: \(error)")
        }
    }

    private func activate() {
        phase = .active
        guard startSession(), session != nil else {
            close(reason: "nghttp2 session could not be created")
            return
        }
        // Without ALPN h2 the peer may not speak HTTP/2 at all: our SETTINGS wait until its first bytes were read
        // (they go out with the answer to them), so an HTTP/1.1 client reads a plain refusal and no frame bytes.
        awaitingFirstBytes = awaitsPrefaceBeforeSending
        flush()
        // Data may already be buffered inside TLS.
        if phase == .active { readAll() }
    }

    // MARK: input

    func readAll() {
        guard let session else { return }
        let buffer = readBuffer
        var budget = 1 << 20  // fairness: at most 1 MiB per wake-up, then let other connections run
        while phase == .active && budget > 0 {
            let result: Sys.IOResult
            do {
                result = try transport.read(into: buffer)
            } catch {
                logger.debug("read failed", metadata: ["error": "\(error)"])
                close(reason: "read error: \(error)")
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
                awaitingFirstBytes = false
                inCallback = true
                let rv = nghttp2_session_mem_recv(session, buffer.bindMemory(to: UInt8.self).baseAddress, n)
                inCallback = false
                if rv == Int(NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue) {
                    refuseNonHTTP2()
                    return
                }
                if rv < 0 {
                    let message = String(cString: nghttp2_strerror(Int32(rv)))
                    logger.debug("HTTP/2 protocol error", metadata: ["error": "\(message)"])
                    // nghttp2 queued a GOAWAY for most errors; send it, then close.
                    closeAfterFlush = true
                    flush()
                    if phase != .closed { close(reason: "protocol error: \(message)") }
                    return
                }
            }
        }
        flush()
    }

    // MARK: output

    /// Writes everything nghttp2 has to send; arms EPOLLOUT when the socket is full.
    func flush() {
        loop.assertInLoop()
        if inCallback {
            flushPending = true
            return
        }
        guard phase == .active, let session, !awaitingFirstBytes || closeAfterFlush else { return }
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
                // The peer may have said goodbye before closing (a GOAWAY with its last-stream-id, which tells the
                // client which streams were not processed): read what already arrived before giving up.
                if !readingAfterWriteError {
                    readingAfterWriteError = true
                    output.removeAll()
                    outputOffset = 0
                    readAll()
                }
                close(reason: "write error: \(error)")
                return
            }
            switch result {
            case .bytes(let n):
                outputOffset += n
                if outputOffset == output.count {
                    output.removeAll(keepingCapacity: output.capacity <= keptOutputCapacity)
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

    func setWriteInterest(_ on: Bool) {
        guard on != writeArmed, phase != .closed else { return }
        writeArmed = on
        loop.modify(transport.fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (on ? EPOLLOUT.rawValue : 0))
    }

    /// Flushes after the current nghttp2 callback batch, or now.
    func flushSoon() {
        if inCallback { flushPending = true } else { flush() }
    }

    /// Flushes once the work already queued on the loop has run: requests handed over from other threads in one
    /// batch go out in one TLS record and one `write` instead of one each (the profile of a bulk send put a third
    /// of the sender's CPU in per-request writes, see docs/send.md).
    func flushAfterQueuedWork() {
        if inCallback {
            flushPending = true
            return
        }
        guard !flushQueued else { return }
        flushQueued = true
        let box = UncheckedBox(self)
        loop.execute {
            box.value.flushQueued = false
            box.value.flush()
        }
    }

    /// The peer's first bytes were not the HTTP/2 connection preface (an HTTP/1.1 request on a connection that
    /// negotiated no ALPN, or on h2c). Servers answer in HTTP/1.1 so the peer's user reads why.
    func refuseNonHTTP2() {
        close(reason: "peer did not send the HTTP/2 connection preface")
    }

    // MARK: close

    func close(reason: String) {
        loop.assertInLoop()
        guard phase != .closed else { return }
        phase = .closed
        logger.trace("connection closed", metadata: ["reason": "\(reason)"])
        loop.unregister(transport.fd)
        Sys.close(transport.fd)
        didClose(reason: reason)
    }

    /// Closes with a TCP reset (RST) instead of a FIN.
    func resetTCP() {
        guard phase != .closed else { return }
        try? Sys.setLinger(transport.fd, onOff: 1, seconds: 0)
        close(reason: "reset on request")
    }

    /// Stops reading and writing (PINGs included) until the peer gives up.
    func blackhole() {
        loop.assertInLoop()
        guard phase == .active || phase == .handshaking else { return }
        phase = .blackholed
        output.removeAll()
        outputOffset = 0
        loop.modify(transport.fd, events: EPOLLRDHUP.rawValue)
    }

    /// Submits SETTINGS.
    func submitSettings(_ settings: HTTP2Settings) {
        loop.assertInLoop()
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
}
