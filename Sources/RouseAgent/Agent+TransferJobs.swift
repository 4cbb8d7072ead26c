import RouseAgentCore
import RouseCurl
import RouseSystem
import RouseText
import Synchronization

/// The agent's steps for one task's libcurl job: started from the book's `.start`, its progress and its end told to
/// ``Transfers``.
extension Agent {
    func startJob(_ record: TransferRecord) {
        let id = record.id
        let download = record.kind == .download
        let fd: Int32
        do {
            try AgentError.wrapping(try Sys.makeDirectories(PathText.parent(record.spoolFile)))
            fd = try AgentError.wrapping(try Sys.openSpool(record.spoolFile))
        } catch {
            perform(
                transfers: transfers.finished(
                    id, .failure(code: "spoolFull", detail: "\(error)", bytes: 0, validator: nil)))
            return
        }
        let resume = download ? (Sys.fileSize(fd)?.size ?? 0) : 0
        var headers: [(name: String, value: String)] = record.headers.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingBlanks())
        }
        if download && resume > 0 {
            headers.append(("Range", "bytes=\(resume)-"))
            if let validator = record.validator { headers.append(("If-Range", validator)) }
        }
        let token = transfers.makeToken()
        let sink = SpoolSink(
            fd: fd, upload: !download, resumeFrom: resume, account: account(record.handler),
            onProgress: { bytes, total, validator in
                Task {
                    await self.transferProgress(id, token: token, bytes: bytes, total: total, validator: validator)
                }
            })
        var request = CurlRequest(
            method: record.method, url: record.url, headers: headers, connectTimeout: .seconds(30),
            timeout: .seconds(24 * 3600), tls: CurlTLSOptions(caFile: configuration.transferCAFile),
            maxResponseBodyBytes: 0)
        let limits = configuration.transferLimits
        request.lowSpeed = CurlLowSpeed(
            bytesPerSecond: limits.lowSpeedBytesPerSecond, duration: .seconds(limits.lowSpeedSeconds))
        request.maxRedirects = 5  // as URLSession follows them; a redirect's body is replaced by the final one's
        // Every address libcurl connects to (redirects included) is checked: a root socket reaches no internal service.
        request.publicDestinationsOnly = handlers.configuration(of: record.handler)?.allowPrivateDestinations != true
        if !download { request.upload = CurlUpload(size: Sys.fileSize(fd)?.size ?? 0) }
        let curl = curl
        let task = Task {
            let outcome: TransferBook.Outcome?
            do {
                let response = try await curl.send(request, sink: sink)
                let bytes = sink.state.withLock { $0.bytes }
                outcome = .response(status: response.status, bytes: bytes, validator: sink.validator)
            } catch is CancellationError {
                outcome = nil
            } catch {
                outcome = Self.failure(error, sink: sink)
            }
            sink.close()
            self.transferEnded(id, token: token, outcome)
        }
        transfers.started(id, token: token, task)
    }

    private func transferProgress(_ id: Int, token: Int, bytes: Int64, total: Int64?, validator: String?) {
        guard transfers.isRunning(id, token: token) else { return }
        perform(transfers: transfers.progress(id, bytes: bytes, total: total, validator: validator))
    }

    private func transferEnded(_ id: Int, token: Int, _ outcome: TransferBook.Outcome?) {
        guard transfers.isRunning(id, token: token) else { return }
        transfers.ended(id)
        guard let outcome else { return }
        perform(transfers: transfers.finished(id, outcome))
    }

    private static func failure(_ error: any Error, sink: SpoolSink) -> TransferBook.Outcome {
        let (bytes, validator, spoolFull, writeError) = sink.state.withLock {
            ($0.bytes, $0.validator, $0.spoolFull, $0.writeError)
        }
        if spoolFull {
            return .failure(
                code: "spoolFull", detail: "the handler's spool budget is spent", bytes: bytes, validator: validator)
        }
        if let writeError { return .failure(code: "disk", detail: writeError, bytes: bytes, validator: validator) }
        let curlError = error as? CurlError
        let code: String
        switch curlError?.code {
        case .couldntResolveHost?, .couldntConnect?, .couldntResolveProxy?: code = "unreachable"
        case .operationTimedOut?: code = "timeout"
        case .sslConnectError?, .peerFailedVerification?, .sslCACertBadFile?, .sslCertProblem?, .sslCipher?:
            code = "tls"
        default: code = "transport"
        }
        return .failure(code: code, detail: "\(error)", bytes: bytes, validator: validator)
    }
}

extension SpoolSink {
    /// The validator of the last response head.
    var validator: String? { state.withLock { $0.validator } }
}
