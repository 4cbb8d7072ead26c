import CNghttp2
import Logging
import RouseEventLoop
import RouseSystem

/// Per-stream state of a client request (loop-confined).
///
/// nghttp2 hands it back to the callbacks as the stream's user data (and the request body's data source), so a
/// callback finds it without a dictionary look-up; `streams` keeps it alive until the stream closes.
final class ClientStream {
    var id: Int32 = 0
    let completion: @Sendable (HTTP2ClientResult) -> Void
    var requestBody: [UInt8]
    var requestOffset = 0
    var status = 0
    var headers: [HTTP2Header] = []
    var body: [UInt8] = []
    var complete = false
    /// The shared header block whose bytes nghttp2 points at until this stream's HEADERS are encoded.
    let block: HTTP2HeaderBlock?

    init(body: [UInt8], block: HTTP2HeaderBlock?, completion: @escaping @Sendable (HTTP2ClientResult) -> Void) {
        self.requestBody = body
        self.block = block
        self.completion = completion
    }

    /// The stream behind an nghttp2 user-data pointer.
    @inline(__always)
    static func from(_ pointer: UnsafeMutableRawPointer?) -> ClientStream? {
        guard let pointer else { return nil }
        return Unmanaged<ClientStream>.fromOpaque(pointer).takeUnretainedValue()
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
    /// Scratch for the `nghttp2_nv` array and the copied bytes of a request that uses a shared header block
    /// (nghttp2 copies what it needs during `nghttp2_submit_request`, so one scratch serves every request).
    private var scratchEntries = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: 16)
    private var scratchEntryCapacity = 16
    private var scratchBytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 512)
    private var scratchByteCapacity = 512
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
        scratchEntries.deallocate()
        scratchBytes.deallocate()
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
        let stream = ClientStream(body: request.body, block: request.shared, completion: completion)
        let streamPointer = Unmanaged.passUnretained(stream).toOpaque()
        var provider = nghttp2_data_provider(
            source: nghttp2_data_source(ptr: streamPointer), read_callback: ClientCallbacks.readRequestBody)
        let hasBody = !request.body.isEmpty
        let id = withUnsafePointer(to: &provider) { providerPointer in
            submitHeaders(request, session: session, provider: hasBody ? providerPointer : nil, stream: streamPointer)
        }
        guard id > 0 else {
            let reason = String(cString: nghttp2_strerror(id))
            completion(.notProcessed(reason: "nghttp2_submit_request: \(reason)"))
            return
        }
        stream.id = id
        streams[id] = stream
        flushAfterQueuedWork()
    }

    private func submitHeaders(
        _ request: HTTP2ClientRequest, session: OpaquePointer, provider: UnsafePointer<nghttp2_data_provider>?,
        stream: UnsafeMutableRawPointer
    ) -> Int32 {
        if let block = request.shared {
            return withSharedHeaders(block, request) { nva, count in
                nghttp2_submit_request(session, nil, nva, count, provider, stream)
            }
        } else {
            var all = [
                HTTP2Header(":method", request.method), HTTP2Header(":scheme", request.scheme),
                HTTP2Header(":authority", request.authority), HTTP2Header(":path", request.path, neverIndex: true),
            ]
            all.append(contentsOf: request.headers)
            return withNGHTTP2Headers(all) { nva, count -> Int32 in
                nghttp2_submit_request(session, nil, nva, count, provider, stream)
            }
        }
    }

    /// Calls `body` with the request's header entries: the block's pseudo-headers, `:path` (the block's prefix and
    /// `request.path`, copied), the block's regular fields (pointers nghttp2 does not copy), then `request.headers`
    /// (copied). The array and copied bytes are this connection's scratch, valid for the call only.
    private func withSharedHeaders<R>(
        _ block: HTTP2HeaderBlock, _ request: HTTP2ClientRequest, _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
    ) -> R {
        let count = block.sharedCount + 1 + request.headers.count
        var byteCount = block.pathPrefix.count + request.path.utf8.count
        for h in request.headers { byteCount += h.name.utf8.count + h.value.utf8.count }
        if count > scratchEntryCapacity {
            scratchEntries.deallocate()
            scratchEntryCapacity = max(count, scratchEntryCapacity * 2)
            scratchEntries = .allocate(capacity: scratchEntryCapacity)
        }
        if byteCount > scratchByteCapacity {
            scratchBytes.deallocate()
            scratchByteCapacity = max(byteCount, scratchByteCapacity * 2)
            scratchBytes = .allocate(capacity: scratchByteCapacity)
        }
        let nva = scratchEntries
        let bytes = scratchBytes
        nva.update(from: block.pseudo, count: block.pseudoCount)
        var offset = 0
        if let prefix = block.pathPrefix.baseAddress { bytes.update(from: prefix, count: block.pathPrefix.count) }
        offset += block.pathPrefix.count
        offset += copyUTF8(request.path, to: bytes + offset)
        let pathName: StaticString = ":path"
        nva[block.pseudoCount] = nghttp2_nv(
            name: UnsafeMutablePointer(mutating: pathName.utf8Start), value: bytes, namelen: pathName.utf8CodeUnitCount,
            valuelen: offset,
            flags: UInt8(
                NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue
                    | (block.pathNeverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue)))
        var index = block.pseudoCount + 1
        (nva + index).update(from: block.regular, count: block.regularCount)
        index += block.regularCount
        for h in request.headers {
            let name = bytes + offset
            let nameLength = copyUTF8(h.name, to: name)
            offset += nameLength
            let value = bytes + offset
            let valueLength = copyUTF8(h.value, to: value)
            offset += valueLength
            nva[index] = nghttp2_nv(
                name: name, value: value, namelen: nameLength, valuelen: valueLength,
                flags: UInt8(h.neverIndex ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue))
            index += 1
        }
        return body(nva, count)
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
        // The streams are released below: nghttp2 must not hand their pointers to a callback any more.
        if let session {
            for id in pending.keys { _ = nghttp2_session_set_stream_user_data(session, id, nil) }
        }
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

/// Copies `string`'s UTF-8 bytes to `destination` in one move; returns the count.
@inline(__always)
private func copyUTF8(_ string: String, to destination: UnsafeMutablePointer<UInt8>) -> Int {
    var string = string
    return string.withUTF8 { source in
        if let base = source.baseAddress { destination.update(from: base, count: source.count) }
        return source.count
    }
}
