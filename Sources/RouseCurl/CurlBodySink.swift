/// Where a file transfer's bytes go and come from, instead of memory: the agent's background transfers
/// write a download straight into a spool file and read an upload from a descriptor, on the client's
/// loop thread, so a gigabyte never sits in memory and no task hops between threads per chunk.
///
/// Every method is called on the client's loop thread (inside `curl_multi_perform`), one transfer at a time;
/// an implementation must not block for long (a local file's read or write is fine).
package protocol CurlBodySink: AnyObject, Sendable {
    /// The final response head arrived (status ≥ 200). Return false to abort the transfer (`CURLE_WRITE_ERROR`).
    func head(status: Int, headers: [(name: String, value: String)]) -> Bool
    /// A piece of the response body. Return false to abort the transfer (`CURLE_WRITE_ERROR`).
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Fills `buffer` with the next upload bytes: their count, 0 at the end, nil to abort (`CURLE_ABORTED_BY_CALLBACK`).
    /// Called only for requests with ``CurlRequest/upload``.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int?
}

/// An upload whose body comes from a ``CurlBodySink``'s `read(into:)` rather than ``CurlRequest/body``.
package struct CurlUpload: Sendable {
    /// Exact body size in bytes (sent as `Content-Length`).
    package var size: Int64

    /// An upload of `size` bytes.
    package init(size: Int64) { self.size = size }
}

/// The low-speed limit of a long transfer (`CURLOPT_LOW_SPEED_LIMIT`, `CURLOPT_LOW_SPEED_TIME`): slower than
/// `bytesPerSecond` for `duration` fails it with `CURLE_OPERATION_TIMEDOUT`, where a total deadline could not tell a
/// stalled link from a large file.
package struct CurlLowSpeed: Sendable {
    /// Bytes per second below which the transfer counts as stalled.
    package var bytesPerSecond: Int
    /// How long it may stay below.
    package var duration: Duration

    /// A low-speed limit.
    package init(bytesPerSecond: Int, duration: Duration) {
        self.bytesPerSecond = bytesPerSecond
        self.duration = duration
    }
}

extension CurlHTTPClient {
    /// Sends `request` with its response body going to `sink` (and, with ``CurlRequest/upload``, its request body
    /// coming from it); returns the response head (the returned body is empty). Cancelling the awaiting task
    /// removes the transfer. Throws ``CurlError`` like ``send(_:)``.
    package func send(_ request: CurlRequest, sink: any CurlBodySink) async throws -> CurlResponse {
        try await send(request, transfer: try CurlTransfer(request: request, streaming: false, sink: sink))
    }
}
