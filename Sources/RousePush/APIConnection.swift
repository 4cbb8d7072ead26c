import CRouseSys
import Glibc
import RouseEventLoop
import RousePushCore
import RouseSystem

/// One HTTP/1.1 API connection on the API loop: reads into the bounded parser, answers one request at a time (the
/// next pipelined request is parsed only after the answer), writes without blocking. Loop-thread only.
final class APIConnection: EventLoopFDHandler {
    let fd: Int32
    let id: UInt64
    private let bearer: String?
    private let loop: EventLoop
    private let state: PushAPIServerState
    private var parser: HTTP1RequestParser
    private var output: [UInt8] = []
    /// The buffer `recv` fills, made on the first read and kept (a fresh zeroed 16 KiB array per readable event was
    /// a malloc and a memset per request).
    private var chunk: [UInt8] = []
    private var closeAfterWrite = false
    private var closed = false
    private var timer: UInt64?
    private var wantsWrite = false
    /// Reading stopped: a pipelining client filled the bounded buffer while a request is answered.
    private var readPaused = false
    private var interest = EPOLLIN.rawValue
    /// A request is being answered (its push has no outcome yet).
    private(set) var busy = false
    /// Bytes asked of each `recv`.
    private static let readSize = 16384

    /// Why the peer may not use the API (its credentials): every request is answered 403.
    private let denied: String?

    init(fd: Int32, id: UInt64, bearer: String?, denied: String? = nil, loop: EventLoop, state: PushAPIServerState) {
        self.fd = fd
        self.id = id
        self.bearer = bearer
        self.denied = denied
        self.loop = loop
        self.state = state
        parser = HTTP1RequestParser(limits: state.parserLimits)
    }

    /// Answers `status` on a connection that is not served, then closes it (best effort, never blocking).
    static func refuse(_ fd: Int32, status: Int, message: String) {
        let response = PushAPIResponse.error(status, message)
        let bytes = Self.encode(response, keepAlive: false)
        _ = bytes.withUnsafeBytes { try? Sys.send(fd, $0) }
        Sys.close(fd)
    }

    func handleEvents(_ events: UInt32) {
        loop.assertInLoop()
        // Hung up or in error in both directions: nobody is left to answer (a push in flight still gets its outcome,
        // counted in the metrics and the prune output).
        if events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 && events & EPOLLIN.rawValue == 0 {
            close()
            return
        }
        if events & EPOLLOUT.rawValue != 0 { flush() }
        if closed { return }
        if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { readAvailable() }
    }

    private func readAvailable() {
        if chunk.isEmpty { chunk = [UInt8](repeating: 0, count: Self.readSize) }
        while !closed {
            // Bounded read buffer: a client that pipelines more than a head and a body's worth waits.
            if parser.bufferedCount > state.parserLimits.maxHeaderBytes + state.parserLimits.maxBodyBytes {
                readPaused = true
                updateInterest()
                break
            }
            let result: Sys.IOResult
            do {
                result = try chunk.withUnsafeMutableBytes { try Sys.recv(fd, $0) }
            } catch {
                close()
                return
            }
            switch result {
            case .bytes(let n):
                parser.append(chunk[0..<n])
                // A short read took all there was: the loop is level-triggered, so more data wakes it again, and
                // the `recv` that would only answer EAGAIN (one system call per request) is skipped.
                if n < chunk.count {
                    process()
                    return
                }
            case .wouldBlock:
                process()
                return
            case .endOfFile:
                // A half-closed client may still wait for its answer.
                if busy || !output.isEmpty {
                    // EPOLLIN stays readable at EOF: stop listening for it, or the loop would spin until the answer.
                    closeAfterWrite = true
                    updateInterest()
                } else {
                    close()
                }
                return
            }
        }
        process()
    }

    /// Parses and starts the next request, if idle.
    private func process() {
        guard !busy, !closed, !closeAfterWrite else { return }
        switch parser.next() {
        case .needMore:
            if parser.inRequest { arm(state.requestTimeout, limit: .timeout) } else { armIdle() }
        case .expectContinue:
            queue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            process()
        case .failure(let error):
            state.metrics.limitHit(
                error.status == 413 ? .bodySize : error.status == 431 || error.status == 414 ? .headerSize : .parse)
            finish(.error(error.status, error.message), keepAlive: false)
        case .request(let request):
            start(request)
        }
    }

    private func start(_ request: HTTP1Request) {
        cancelTimer()
        let keepAlive = request.keepAlive
        if let denied {
            finish(.error(403, denied), keepAlive: false)
            return
        }
        if let bearer {
            let given = request.header("authorization") ?? ""
            guard PushAPIAuth.bearerMatches(given, bearer) else {
                state.metrics.limitHit(.auth)
                finish(
                    .error(
                        401, given.isEmpty ? "missing bearer token" : "wrong bearer token",
                        headers: [("www-authenticate", "Bearer")]), keepAlive: keepAlive)
                return
            }
        }
        busy = true
        let loop = self.loop
        let me = UncheckedConnection(self)
        state.handler.handle(method: request.method, target: request.target, body: request.body) { response in
            if loop.inLoop {
                me.value.finish(response, keepAlive: keepAlive)
            } else {
                loop.execute { me.value.finish(response, keepAlive: keepAlive) }
            }
        }
    }

    /// Writes `response`; then the next request, or the close.
    func finish(_ response: PushAPIResponse, keepAlive: Bool) {
        loop.assertInLoop()
        guard !closed else { return }
        busy = false
        queue(response, keepAlive: keepAlive)
        if !keepAlive { closeAfterWrite = true }
        if closeAfterWrite && output.isEmpty {
            close()
            return
        }
        if readPaused {
            readPaused = false
            updateInterest()
            readAvailable()
            return
        }
        process()
    }

    /// Listens for what the connection can use now: input unless paused or closing, output while some waits.
    private func updateInterest() {
        let wanted = (readPaused || closeAfterWrite ? 0 : EPOLLIN.rawValue) | (wantsWrite ? EPOLLOUT.rawValue : 0)
        guard wanted != interest, !closed else { return }
        interest = wanted
        loop.modify(fd, events: wanted)
    }

    static func encode(_ response: PushAPIResponse, keepAlive: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        encode(response, keepAlive: keepAlive, into: &bytes)
        return bytes
    }

    /// Appends the response's status line, headers and body to `out` (bytes written in place: no intermediate
    /// strings).
    static func encode(_ response: PushAPIResponse, keepAlive: Bool, into out: inout [UInt8]) {
        out.reserveCapacity(out.count + 128 + response.body.count)
        out.append(contentsOf: "HTTP/1.1 ".utf8)
        out.append(contentsOf: String(response.status).utf8)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: Self.reasonPhrase(response.status).utf8)
        out.append(contentsOf: "\r\n".utf8)
        for (name, value) in response.headers {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "content-length: ".utf8)
        out.append(contentsOf: String(response.body.count).utf8)
        out.append(contentsOf: "\r\n".utf8)
        if !keepAlive { out.append(contentsOf: "connection: close\r\n".utf8) }
        out.append(contentsOf: "\r\n".utf8)
        out.append(contentsOf: response.body)
    }

    private func queue(_ bytes: [UInt8]) {
        output.append(contentsOf: bytes)
        flush()
    }

    /// Queues a response, written into the output buffer in place, and sends.
    private func queue(_ response: PushAPIResponse, keepAlive: Bool) {
        Self.encode(response, keepAlive: keepAlive, into: &output)
        flush()
    }

    private func flush() {
        while !output.isEmpty && !closed {
            let result: Sys.IOResult
            do {
                result = try output.withUnsafeBytes { try Sys.send(fd, $0) }
            } catch {
                close()
                return
            }
            switch result {
            case .bytes(let n):
                // All sent (the usual case): keep the buffer's capacity for the next answer.
                if n == output.count { output.removeAll(keepingCapacity: true) } else { output.removeFirst(n) }
            case .wouldBlock:
                wantsWrite = true
                updateInterest()
                return
            case .endOfFile: return
            }
        }
        if wantsWrite {
            wantsWrite = false
            updateInterest()
        }
        if output.isEmpty && closeAfterWrite && !busy { close() }
    }

    /// The keep-alive limit between requests.
    func armIdle() { arm(state.idleTimeout, limit: nil) }

    private func arm(_ delay: Duration, limit: PushServiceMetrics.Limit?) {
        cancelTimer()
        timer = loop.schedule(after: delay) { [weak self] in
            guard let self, !self.closed else { return }
            self.timer = nil
            if self.busy { return }
            if let limit {
                self.state.metrics.limitHit(limit)
                self.finish(.error(408, "request not complete within \(delay)"), keepAlive: false)
            } else {
                self.close()
            }
        }
    }

    private func cancelTimer() {
        if let timer { loop.cancelTimer(timer) }
        timer = nil
    }

    func close() {
        loop.assertInLoop()
        guard !closed else { return }
        closed = true
        cancelTimer()
        loop.unregister(fd)
        Sys.close(fd)
        state.closed(self)
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}

/// Hands a loop-confined connection to the loop from a sender's thread; only dereferenced on the API loop.
struct UncheckedConnection: @unchecked Sendable {  // dereferenced only on the connection's loop thread.
    let value: APIConnection
    init(_ value: APIConnection) { self.value = value }
}
