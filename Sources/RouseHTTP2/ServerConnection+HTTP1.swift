import CRouseSys
import Glibc
import RouseEventLoop
import RouseHTTP1
import RouseSystem
import Synchronization

/// A server connection whose ALPN selected `http/1.1` (`HTTP2ServerConfiguration.servesHTTP11`): requests are read
/// by the bounded `HTTP1RequestParser` and handed to the same handler as HTTP/2 requests (as streams 1, 3, 5, …),
/// one at a time: the socket is not read while a request waits for its answer, so a pipelining client holds at
/// most the parser's bound. Responses carry `Content-Length`; a streaming response (`sendHead`/`write`) is sent
/// once it is finished. Budgets: the connection caps of the listener (accept), the listener's buffered-bytes
/// budget (bytes held by the parser count in it), the request deadline (a started request that is not complete in
/// `requestTimeout` closes the connection), and the idle limit.
final class HTTP1ServerState {
    var parser: HTTP1RequestParser
    /// Bytes to write.
    var output: [UInt8] = []
    var outputOffset = 0
    /// The stream id of the request the handler holds (`nil`: none).
    var current: Int32?
    /// Whether the connection stays open after the current answer.
    var keepAlive = true
    /// A streaming response being collected (`sendHead` … `finish`).
    var pendingHead: (status: Int, headers: [HTTP2Header])?
    var pendingBody: [UInt8] = []
    var nextStreamID: Int32 = 1
    /// Close once the output is written.
    var closeAfterOutput = false
    /// When the request being read began (loop ns), for the request deadline.
    var requestStartedAt: UInt64?
    /// Whether the socket is polled for reading and for writing now.
    var readInterest = true
    var writeInterest = false

    init(limits: HTTP1RequestParser.Limits) {
        parser = HTTP1RequestParser(limits: limits)
    }
}

extension ServerConnection {
    /// Starts serving HTTP/1.1: makes the handler, then reads what already arrived.
    func beginHTTP11() {
        var limits = HTTP1RequestParser.Limits()
        limits.maxBodyBytes = shared.configuration.maxRequestBodySize
        http1 = HTTP1ServerState(limits: limits)
        var connectionInfo = info
        connectionInfo.tlsVersion = transport.tlsVersion
        connectionInfo.peerCertificate = transport.peerCertificate()
        handler = shared.factory(connectionInfo, HTTP2Connection(ref: ref))
        http1ReadAll()
    }

    /// Reads while no request waits for its answer, then parses.
    func http1ReadAll() {
        guard let state = http1 else { return }
        let buffer = readBuffer
        var budget = 1 << 20
        while phase == .active && state.current == nil && !state.closeAfterOutput && budget > 0 {
            let result: Sys.IOResult
            do {
                result = try transport.read(into: buffer)
            } catch {
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
                let total = shared.bufferedRequestBytes.wrappingAdd(n, ordering: .relaxed).newValue
                bufferedRequestBytes += n
                if total > shared.configuration.maxListenerBufferedRequestBytes {
                    shared.counters.streamsRefusedListenerBuffer.add(1, ordering: .relaxed)
                    http1Error(status: 503, "the server holds too many request bytes; retry later")
                    return
                }
                state.parser.append(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                http1Parse()
            }
        }
        http1UpdateInterest()
    }

    /// Takes complete requests from the parser: one at a time to the handler.
    private func http1Parse() {
        guard let state = http1 else { return }
        while phase == .active && state.current == nil && !state.closeAfterOutput {
            let step = state.parser.next()
            http1Recharge()
            switch step {
            case .needMore:
                if state.parser.inRequest { http1ArmRequestDeadline() }
                return
            case .expectContinue:
                http1Append(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            case .failure(let error):
                http1Error(status: error.status, error.message)
                return
            case .request(let request):
                state.requestStartedAt = nil
                let id = state.nextStreamID
                state.nextStreamID = id < Int32.max - 2 ? id + 2 : 1
                state.current = id
                state.keepAlive = request.keepAlive
                let host = request.header("host") ?? ""
                let headers = request.headers.filter { $0.name != "host" }.map { HTTP2Header($0.name, $0.value) }
                let converted = HTTP2Request(
                    method: request.method, path: request.target, scheme: "https", authority: host, headers: headers,
                    duplicatePseudoHeaders: [], body: request.body, bodyTruncated: false,
                    bodyLength: request.body.count, trailers: [], streamID: id)
                handler?.handleRequest(converted, stream: HTTP2Stream(ref: ref, id: id))
            }
        }
    }

    /// Keeps the connection's and the listener's buffered-bytes counts equal to what the parser holds.
    private func http1Recharge() {
        guard let state = http1 else { return }
        let held = state.parser.bufferedCount
        let delta = held - bufferedRequestBytes
        if delta != 0 {
            shared.bufferedRequestBytes.wrappingAdd(delta, ordering: .relaxed)
            bufferedRequestBytes = held
        }
    }

    /// A request began: it must be complete within `requestTimeout`, or the connection closes.
    private func http1ArmRequestDeadline() {
        guard let state = http1, state.requestStartedAt == nil, let timeout = shared.configuration.requestTimeout
        else { return }
        let started = loop.now
        state.requestStartedAt = started
        let box = UncheckedBox(self)
        _ = loop.schedule(after: timeout) {
            let connection = box.value
            guard connection.phase == .active, let state = connection.http1, state.requestStartedAt == started else {
                return
            }
            connection.shared.counters.requestTimeouts.add(1, ordering: .relaxed)
            connection.http1Error(status: 408, "the request was not complete within the time allowed")
        }
    }

    /// Answers a refused request and closes after it.
    func http1Error(status: Int, _ message: String) {
        guard let state = http1 else { return }
        state.keepAlive = false
        state.current = nil
        http1Append(Self.http1Response(status: status, headers: [], body: Array((message + "\n").utf8), close: true))
        state.closeAfterOutput = true
        http1Flush()
    }

    func http1Respond(streamID: Int32, status: Int, headers: [HTTP2Header], body: [UInt8]) {
        guard let state = http1, state.current == streamID, phase == .active else { return }
        state.current = nil
        let close = !state.keepAlive || state.closeAfterOutput
        http1Append(Self.http1Response(status: status, headers: headers, body: body, close: close))
        if close { state.closeAfterOutput = true }
        http1Flush()
        // The next pipelined request, if any, is already buffered.
        if phase == .active && !state.closeAfterOutput {
            http1Parse()
            http1ReadAll()
        }
    }

    func http1Head(streamID: Int32, status: Int, headers: [HTTP2Header]) {
        guard let state = http1, state.current == streamID, state.pendingHead == nil else { return }
        state.pendingHead = (status, headers)
    }

    func http1Write(streamID: Int32, bytes: [UInt8]) {
        guard let state = http1, state.current == streamID, state.pendingHead != nil else { return }
        if state.pendingBody.count + bytes.count > 1 << 20 {
            return close(reason: "HTTP/1.1 streaming response over 1 MiB")
        }
        state.pendingBody += bytes
    }

    func http1End(streamID: Int32) {
        guard let state = http1, state.current == streamID, let head = state.pendingHead else { return }
        let body = state.pendingBody
        state.pendingHead = nil
        state.pendingBody = []
        http1Respond(streamID: streamID, status: head.status, headers: head.headers, body: body)
    }

    /// Graceful end (idle, shutdown): now when no request waits, else after its answer.
    func http1Finish() {
        guard let state = http1 else { return }
        state.keepAlive = false
        if state.current == nil {
            state.closeAfterOutput = true
            http1Flush()
        }
    }

    private func http1Append(_ bytes: [UInt8]) {
        guard let state = http1 else { return }
        if state.outputOffset > 0 && state.outputOffset == state.output.count {
            state.output.removeAll(keepingCapacity: true)
            state.outputOffset = 0
        }
        state.output += bytes
    }

    /// Writes what is buffered; closes when asked to after it.
    func http1Flush() {
        guard let state = http1, phase == .active else { return }
        while state.outputOffset < state.output.count {
            let result: Sys.IOResult
            do {
                result = try state.output.withUnsafeBytes { raw in
                    try transport.write(UnsafeRawBufferPointer(rebasing: raw[state.outputOffset...]))
                }
            } catch {
                close(reason: "write error: \(error)")
                return
            }
            switch result {
            case .bytes(let n):
                state.outputOffset += n
            case .wouldBlock, .endOfFile:
                http1UpdateInterest()
                return
            }
        }
        state.output.removeAll(keepingCapacity: state.output.capacity <= Self.keptBufferCapacity)
        state.outputOffset = 0
        if state.closeAfterOutput || closeAfterFlush {
            close(reason: "HTTP/1.1 connection finished")
            return
        }
        http1UpdateInterest()
    }

    /// Polls for reading only while no request waits (a level-triggered poll would spin otherwise), for writing
    /// only while output waits.
    private func http1UpdateInterest() {
        guard let state = http1, phase == .active else { return }
        let read = state.current == nil && !state.closeAfterOutput
        let write = state.outputOffset < state.output.count
        guard read != state.readInterest || write != state.writeInterest else { return }
        state.readInterest = read
        state.writeInterest = write
        loop.modify(
            transport.fd,
            events: EPOLLRDHUP.rawValue | (read ? EPOLLIN.rawValue : 0) | (write ? EPOLLOUT.rawValue : 0))
    }

    static func http1Response(status: Int, headers: [HTTP2Header], body: [UInt8], close: Bool) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for header in headers where header.name != "content-length" && header.name != "connection" {
            // Values come from the application; a CR or LF in one would split the response.
            guard !header.value.utf8.contains(where: { $0 == 13 || $0 == 10 }) else { continue }
            text += "\(header.name): \(header.value)\r\n"
        }
        text += "content-length: \(body.count)\r\n"
        if close { text += "connection: close\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
