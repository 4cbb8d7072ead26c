import CCurl
import CRouseCurl
import Synchronization

/// One request in flight: its easy handle, what libcurl has delivered so far, and who is waiting.
///
/// `@unchecked Sendable`: all mutable state lives in `state`, a `Mutex`, except `onHeadArrived`, `activity` and
/// `sinkRefused`, which only the loop thread touches. `easy` is configured before the transfer is submitted and
/// afterwards used only on the loop thread (libcurl's callbacks run there, inside `curl_multi_perform`).
/// Continuations are always resumed outside the lock.
final class CurlTransfer: @unchecked Sendable {
    private enum Waiter {
        case buffered(CheckedContinuation<CurlResponse, any Error>)
        case streamHead(CheckedContinuation<CurlStreamingResponse, any Error>)
    }

    private struct State {
        var waiter: Waiter?
        var cancelled = false
        var finished = false
        var status = 0
        var headers: [(name: String, value: String)] = []
        var headComplete = false
        var body: [UInt8] = []
        var bodyLimitExceeded = false
        /// The stream handed to the caller with the head; held here only until then, so that a caller
        /// dropping it cancels the transfer.
        var bodyStream: AsyncThrowingStream<[UInt8], any Error>?
    }

    let easy: CurlEasy
    /// Loop thread only: called once when the response head has arrived (see `CurlMultiLoop`).
    var onHeadArrived: (() -> Void)?
    /// Loop thread only: the loop's count of callbacks, bumped by each of this transfer's (see `CurlMultiLoop`).
    var activity: CurlLoopActivity?
    private let state = Mutex(State())
    private let maxBodyBytes: Int
    /// Set for streaming transfers: where body chunks go.
    private let bodyContinuation: AsyncThrowingStream<[UInt8], any Error>.Continuation?
    /// Set for file transfers: where the body goes and an upload comes from (loop thread only).
    private let sink: (any CurlBodySink)?
    /// The sink refused the head: the body is refused too (loop thread only).
    private var sinkRefused = false

    /// Builds and configures the easy handle; throws before anything is sent when the request is invalid.
    init(request: CurlRequest, streaming: Bool, sink: (any CurlBodySink)? = nil) throws {
        self.sink = sink
        easy = try CurlEasy()
        maxBodyBytes = request.maxResponseBodyBytes
        if streaming {
            let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
            state.withLock { $0.bodyStream = stream }
            bodyContinuation = continuation
        } else {
            bodyContinuation = nil
        }
        try easy.apply(request)
        let owner = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        try easy.setCallback(CURLOPT_HEADERFUNCTION, curlTransferHeaderCallback, name: "CURLOPT_HEADERFUNCTION")
        try easy.setPointer(CURLOPT_HEADERDATA, owner, name: "CURLOPT_HEADERDATA")
        try easy.setCallback(CURLOPT_WRITEFUNCTION, curlTransferWriteCallback, name: "CURLOPT_WRITEFUNCTION")
        try easy.setPointer(CURLOPT_WRITEDATA, owner, name: "CURLOPT_WRITEDATA")
        if request.upload != nil {
            guard sink != nil else { throw CurlError.invalidRequest("an upload needs a sink to read from") }
            try easy.setCallback(CURLOPT_READFUNCTION, curlTransferReadCallback, name: "CURLOPT_READFUNCTION")
            try easy.setPointer(CURLOPT_READDATA, owner, name: "CURLOPT_READDATA")
        }
    }

    /// Called when streaming consumers stop listening; `onStop` removes the transfer.
    func onBodyTermination(_ onStop: @escaping @Sendable () -> Void) {
        bodyContinuation?.onTermination = { termination in
            if case .cancelled = termination { onStop() }
        }
    }

    /// Registers the waiter of a buffered transfer. Returns false (and resumes it) if already cancelled.
    func wait(_ continuation: CheckedContinuation<CurlResponse, any Error>) -> Bool {
        register(.buffered(continuation))
    }

    /// Registers the waiter for a stream's head. Returns false (and resumes it) if already cancelled.
    func wait(_ continuation: CheckedContinuation<CurlStreamingResponse, any Error>) -> Bool {
        register(.streamHead(continuation))
    }

    private func register(_ waiter: Waiter) -> Bool {
        let cancelled = state.withLock { state in
            if state.cancelled || state.finished { return true }
            state.waiter = waiter
            return false
        }
        if cancelled {
            Self.resume(waiter, throwing: CancellationError())
            bodyContinuation?.finish(throwing: CancellationError())
        }
        return !cancelled
    }

    /// The awaiting task was cancelled (or the stream consumer went away): resume with `CancellationError`.
    /// Returns true when this call did the cancelling (the loop must then detach the handle).
    @discardableResult
    func cancel() -> Bool {
        let (waiter, first) = state.withLock { state -> (Waiter?, Bool) in
            if state.cancelled || state.finished { return (nil, false) }
            state.cancelled = true
            defer { state.waiter = nil }
            return (state.waiter, true)
        }
        if let waiter { Self.resume(waiter, throwing: CancellationError()) }
        if first { bodyContinuation?.finish(throwing: CancellationError()) }
        return first
    }

    /// True once cancelled or finished; the loop then does not (re)attach the handle.
    var isDone: Bool {
        state.withLock { $0.cancelled || $0.finished }
    }

    // MARK: libcurl callbacks (loop thread)

    func receiveHeader(_ bytes: UnsafeRawBufferPointer) {
        activity?.count &+= 1
        // Strip the line ending on bytes: as Characters, "\r\n" is one grapheme and matches neither.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0D || bytes[end - 1] == 0x0A { end -= 1 }
        let line = Substring(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self))
        let headJustCompleted = state.withLock { state -> Bool in
            if line.hasPrefix("HTTP/") {
                // A new status line: a 1xx before the final response, or the response after a retry.
                let parts = line.split(separator: " ", maxSplits: 2)
                state.status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
                state.headers = []
                state.headComplete = false
                return false
            }
            if line.isEmpty {
                guard state.status >= 200, !state.headComplete else { return false }
                state.headComplete = true
                return true
            }
            // Lines after the head are trailers; they are not part of the head.
            guard !state.headComplete, let colon = line.firstIndex(of: ":") else { return false }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingSpaces()
            state.headers.append((name, value))
            return false
        }
        if headJustCompleted {
            onHeadArrived?()
            if let sink {
                let (status, headers) = state.withLock { ($0.status, $0.headers) }
                sinkRefused = !sink.head(status: status, headers: headers)
            }
            if bodyContinuation != nil { deliverStreamHead() }
        }
    }

    /// Returns false to make libcurl abort the transfer (buffered body limit).
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        activity?.count &+= 1
        if let sink {
            // A body before the final head (a 1xx has none; libcurl hands no other) is not the sink's.
            return !sinkRefused && state.withLock { $0.headComplete } && sink.body(bytes)
        }
        if let bodyContinuation {
            bodyContinuation.yield(Array(bytes))
            return true
        }
        return state.withLock { state in
            guard state.body.count + bytes.count <= maxBodyBytes else {
                state.bodyLimitExceeded = true
                return false
            }
            state.body.append(contentsOf: bytes)
            return true
        }
    }

    /// Fills libcurl's upload buffer from the sink: the count, or nil to abort.
    func sendBody(_ buffer: UnsafeMutableRawBufferPointer) -> Int? {
        activity?.count &+= 1
        return sink?.read(into: buffer)
    }

    private func deliverStreamHead() {
        let head = makeHead()
        let (waiter, bodyStream) = state.withLock { state in
            defer {
                state.waiter = nil
                state.bodyStream = nil
            }
            return (state.waiter, state.bodyStream)
        }
        guard case .streamHead(let continuation) = waiter, let bodyStream else { return }
        continuation.resume(returning: CurlStreamingResponse(head: head, body: bodyStream))
    }

    // MARK: completion (loop thread)

    /// libcurl finished the transfer with `result`; the handle is already detached from the multi handle.
    func finish(result: CurlCode) {
        if result == .ok {
            complete(error: nil)
        } else {
            let (status, limitExceeded) = state.withLock { ($0.status, $0.bodyLimitExceeded) }
            let detail =
                limitExceeded ? "response body larger than \(maxBodyBytes) bytes" : easy.errorDetail
            let processing = CurlError.processing(code: result, requestSent: requestSent, responseStatus: status)
            complete(error: CurlError(code: result, operation: "transfer", detail: detail, processing: processing))
        }
    }

    /// The client shut down under the transfer.
    func failShutdown() {
        let status = state.withLock { $0.status }
        let processing: CurlError.Processing = status > 0 ? .processed : (requestSent ? .unknown : .notProcessed)
        complete(error: .clientShutdown(processing: processing))
    }

    /// Fails a transfer that could not be attached to the multi handle.
    func fail(_ error: CurlError) {
        complete(error: error)
    }

    private var requestSent: Bool {
        (easy.info(offset: CURLINFO_PRETRANSFER_TIME_T) ?? 0) > 0
    }

    private func complete(error: CurlError?) {
        let head = makeHead()
        let taken = state.withLock { state -> (Waiter?, [UInt8], AsyncThrowingStream<[UInt8], any Error>?)? in
            if state.finished || state.cancelled { return nil }
            state.finished = true
            defer {
                state.waiter = nil
                state.body = []
                state.bodyStream = nil
            }
            return (state.waiter, state.body, state.bodyStream)
        }
        guard let (waiter, body, bodyStream) = taken else { return }
        switch (waiter, error) {
        case (.buffered(let continuation), nil):
            continuation.resume(returning: CurlResponse(head: head, body: body))
        case (.streamHead(let continuation), nil):
            // A response that never completed its head through the header callback.
            if let bodyStream { continuation.resume(returning: CurlStreamingResponse(head: head, body: bodyStream)) }
        case (let waiter?, let error?):
            Self.resume(waiter, throwing: error)
        case (nil, _):
            break
        }
        if let error {
            bodyContinuation?.finish(throwing: error)
        } else {
            bodyContinuation?.finish()
        }
    }

    private func makeHead() -> CurlResponseHead {
        let (status, headers) = state.withLock { ($0.status, $0.headers) }
        let connection = CurlConnectionInfo(
            newConnections: easy.info(long: CURLINFO_NUM_CONNECTS) ?? 0,
            localPort: easy.info(long: CURLINFO_LOCAL_PORT) ?? 0,
            remoteAddress: easy.info(string: CURLINFO_PRIMARY_IP) ?? "",
            remotePort: easy.info(long: CURLINFO_PRIMARY_PORT) ?? 0
        )
        return CurlResponseHead(
            status: easy.info(long: CURLINFO_RESPONSE_CODE).flatMap { $0 > 0 ? $0 : nil } ?? status,
            headers: headers,
            httpVersion: CurlHTTPVersion(rawValue: easy.info(long: CURLINFO_HTTP_VERSION) ?? 0),
            connection: connection
        )
    }

    private static func resume(_ waiter: Waiter, throwing error: any Error) {
        switch waiter {
        case .buffered(let continuation): continuation.resume(throwing: error)
        case .streamHead(let continuation): continuation.resume(throwing: error)
        }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }
}

/// `CURLOPT_HEADERFUNCTION`: userdata is an unretained `CurlTransfer`, kept alive by the loop while attached.
private let curlTransferHeaderCallback: rouse_curl_data_cb = { pointer, size, count, userdata in
    let length = size * count
    guard let pointer, let userdata else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    transfer.receiveHeader(UnsafeRawBufferPointer(start: pointer, count: length))
    return length
}

/// `CURLOPT_WRITEFUNCTION`: userdata is an unretained `CurlTransfer`, kept alive by the loop while attached.
private let curlTransferWriteCallback: rouse_curl_data_cb = { pointer, size, count, userdata in
    let length = size * count
    guard let pointer, let userdata else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.receiveBody(UnsafeRawBufferPointer(start: pointer, count: length)) ? length : 0
}

/// `CURLOPT_READFUNCTION`: userdata is an unretained `CurlTransfer`, kept alive by the loop while attached.
private let curlTransferReadCallback: rouse_curl_data_cb = { pointer, size, count, userdata in
    guard let pointer, let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    guard let filled = transfer.sendBody(UnsafeMutableRawBufferPointer(start: pointer, count: size * count)) else {
        return Int(CURL_READFUNC_ABORT)
    }
    return filled
}
