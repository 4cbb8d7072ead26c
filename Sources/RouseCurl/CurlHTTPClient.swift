import Logging

/// An HTTP/2 client on libcurl's multi interface, for networks where only a proxy reaches the server.
///
/// One dedicated thread runs all transfers of the client; requests multiplex over shared connections
/// (`CURLOPT_PIPEWAIT`, `CURLPIPE_MULTIPLEX`). Every request has a connect and a total deadline, and
/// cancelling the awaiting task removes its transfer. Call ``shutdown()`` when done; dropping the client
/// also stops its thread, failing transfers still in flight.
package final class CurlHTTPClient: Sendable {
    /// Settings of the shared multi handle.
    package struct Configuration: Sendable {
        /// Streams per HTTP/2 connection libcurl will open (`CURLMOPT_MAX_CONCURRENT_STREAMS`); libcurl's
        /// default is 100, APNs allows about 1000. The server's own SETTINGS limit still applies.
        package var maxConcurrentStreams: Int
        /// Connections per host (`CURLMOPT_MAX_HOST_CONNECTIONS`); 0 means no limit. Transfers beyond
        /// what these connections can multiplex wait in libcurl's queue within their deadlines. Without a
        /// limit, libcurl 7.88 opens a new connection for nearly every transfer that does not fit the server's
        /// stream limit (measured: 500 concurrent requests against nghttpd's 100 streams gave 401
        /// connections), hence the default of 1.
        package var maxHostConnections: Int
        /// Connections in total (`CURLMOPT_MAX_TOTAL_CONNECTIONS`); 0 means no limit.
        package var maxTotalConnections: Int

        /// Defaults: 1000 streams per connection, one connection per host, no total limit.
        package init(maxConcurrentStreams: Int = 1000, maxHostConnections: Int = 1, maxTotalConnections: Int = 0) {
            self.maxConcurrentStreams = maxConcurrentStreams
            self.maxHostConnections = maxHostConnections
            self.maxTotalConnections = maxTotalConnections
        }
    }

    private let loop: CurlMultiLoop
    private let logger: Logger

    /// Creates the client and starts its thread.
    package init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "rouse.curl")) throws {
        self.logger = logger
        loop = try CurlMultiLoop(configuration: configuration, logger: logger)
        try loop.start()
    }

    deinit {
        loop.requestStop()
    }

    /// Sends `request` and returns the complete response. Throws ``CurlError`` (whose `processing` says
    /// whether the server may have acted on the request) or `CancellationError` when the task is cancelled.
    package func send(_ request: CurlRequest) async throws -> CurlResponse {
        try await send(request, transfer: try CurlTransfer(request: request, streaming: false))
    }

    func send(_ request: CurlRequest, transfer: CurlTransfer) async throws -> CurlResponse {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CurlResponse, any Error>) in
                if transfer.wait(continuation) {
                    loop.submit(transfer)
                }
            }
        } onCancel: {
            loop.cancel(transfer)
        }
    }

    /// Sends `request` and returns as soon as the response head has arrived; the body follows as an async
    /// stream of chunks. For long-lived responses such as the device channel: `request.timeout` bounds the
    /// stream's lifetime. Cancelling the awaiting task, or ending the body iteration, removes the transfer.
    package func stream(_ request: CurlRequest) async throws -> CurlStreamingResponse {
        let transfer = try CurlTransfer(request: request, streaming: true)
        let loop = self.loop
        transfer.onBodyTermination { [weak transfer] in
            if let transfer { loop.cancel(transfer) }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<CurlStreamingResponse, any Error>) in
                if transfer.wait(continuation) {
                    loop.submit(transfer)
                }
            }
        } onCancel: {
            loop.cancel(transfer)
        }
    }

    /// Stops the client's thread after failing every transfer still in flight, and waits for it.
    package func shutdown() async {
        await loop.stop()
    }
}
