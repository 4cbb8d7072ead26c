import RouseSystem
import RouseText
import RouseWire
import Synchronization

/// Background transfers (iOS's background `URLSession`): the agent downloads and uploads for the handler
/// while it is suspended or not running, and wakes it (launch reason `backgroundTransfer`) when a session's tasks
/// are done. Results arrive in ``AgentClient/messages`` as `transferTask` events (a completed download's file with
/// it: ``AgentClient/takeDownloadedFile(taskID:)``), then `transferSessionDone`, answered with
/// ``AgentClient/transfersHandled(session:)``. docs/agent.md, "Background transfers".
extension AgentClient {
    /// Creates or reattaches the session `identifier` (`URLSessionConfiguration.background(withIdentifier:)`): its
    /// tasks so far. Results still owed follow in ``messages``.
    public func openTransferSession(_ identifier: String) async throws -> [AgentEvent.TransferTask] {
        let answer = try await request(.transferSession(.init(session: identifier)))
        guard case .transferSessionReply(let reply) = answer else {
            throw AgentRequestError(code: "badAnswer", detail: "transferSession answered with \(answer.type)")
        }
        return reply.tasks
    }

    /// Adds a download of `url` (`downloadTask(with:)`); `headers` as `Name: value`; `discretionary`: it may wait
    /// for a non-expensive network. Answered with the queued (or running) task.
    public func download(
        session: String, url: String, headers: [String] = [], discretionary: Bool = false
    ) async throws -> AgentEvent.TransferTask {
        try await task(
            .addTransfer(
                .init(
                    session: session, kind: "download", url: url, headers: headers,
                    discretionary: discretionary ? true : nil)))
    }

    /// Adds an upload of the regular file open as `descriptor` (`uploadTask(with:fromFile:)`): the agent copies it
    /// into its spool at once (the handler may close its descriptor when this returns). `method`: `PUT` or `POST`.
    public func upload(
        session: String, url: String, method: String = "PUT", headers: [String] = [], descriptor: Int32
    ) async throws -> AgentEvent.TransferTask {
        try await task(
            .addTransfer(
                .init(
                    session: session, kind: "upload", url: url, method: method, headers: headers, descriptor: true)),
            descriptor: descriptor)
    }

    /// Adds an upload of `bytes` (at most about 48 KiB: one IPC frame).
    public func upload(
        session: String, url: String, method: String = "PUT", headers: [String] = [], bytes: [UInt8]
    ) async throws -> AgentEvent.TransferTask {
        try await task(
            .addTransfer(
                .init(
                    session: session, kind: "upload", url: url, method: method, headers: headers,
                    body: Base64.encode(bytes))))
    }

    /// Cancels task `taskID` (`URLSessionTask.cancel()`): its state, `cancelled` (or its result if it had ended).
    public func cancelTransfer(session: String, taskID: Int) async throws -> AgentEvent.TransferTask {
        try await task(.cancelTransfer(.init(session: session, taskID: taskID)))
    }

    /// The handler processed the events of `session` (the completion handler of
    /// `handleEventsForBackgroundURLSession`): owed within the time `transferSessionDone` gave.
    public func transfersHandled(session: String) async throws {
        _ = try await request(.transfersHandled(.init(session: session)))
    }

    /// Completes background fetch `fetchID` (the `fetch` event; `performFetchWithCompletionHandler`'s completion):
    /// report honestly and quickly, as the agent gives handlers that do more opportunities (docs/agent.md).
    public func fetchComplete(fetchID: String, result: BackgroundFetchResult) async throws {
        _ = try await request(.fetchComplete(.init(fetchID: fetchID, result: result.rawValue)))
    }

    /// The descriptor of task `taskID`'s downloaded file (read-only; the caller closes it), once: nil when none
    /// came. The agent has already deleted its copy: read or copy the file from this descriptor.
    public func takeDownloadedFile(taskID: Int) -> Int32? {
        downloadedFiles.take(taskID)
    }

    private func task(_ message: AgentRequest, descriptor: Int32? = nil) async throws -> AgentEvent.TransferTask {
        let answer: AgentEvent = try await withCheckedThrowingContinuation { waiter in
            guard let id = requests.register(waiter) else {
                waiter.resume(throwing: AgentRequestError(code: "connectionClosed", detail: "the connection is closed"))
                return
            }
            do {
                let bytes = FrameCodec.encode(message, requestID: id)
                let socket = connection.withLock { $0.socket }
                if let descriptor {
                    try socket.write(bytes, descriptor: descriptor)
                } else {
                    try socket.write(bytes)
                }
            } catch {
                requests.take(id)?.resume(throwing: error)
            }
        }
        if case .error(let failure) = answer { throw AgentRequestError(failure) }
        guard case .transferTask(let task) = answer else {
            throw AgentRequestError(code: "badAnswer", detail: "\(message.type) answered with \(answer.type)")
        }
        return task
    }
}

/// Downloaded files received and not yet taken, by task (descriptors owned here until taken; closed with the
/// client).
final class DownloadedFiles: Sendable {
    private let files = Mutex<[Int: Int32]>([:])

    func put(_ taskID: Int, _ fd: Int32) {
        let old = files.withLock { files in
            defer { files[taskID] = fd }
            return files[taskID]
        }
        if let old { Sys.close(old) }
    }

    func take(_ taskID: Int) -> Int32? { files.withLock { $0.removeValue(forKey: taskID) } }

    deinit {
        for fd in files.withLock({ $0.values }) { Sys.close(fd) }
    }
}
