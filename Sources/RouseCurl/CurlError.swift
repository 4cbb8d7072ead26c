/// An error from the curl transport: a libcurl code with its text and the operation that failed, plus what
/// the caller most needs for retries: whether the server may have processed the request.
package struct CurlError: Error, Sendable, CustomStringConvertible {
    /// Whether the server may have acted on the request when the error happened.
    package enum Processing: Sendable, Hashable {
        /// The request never left this process (connect, TLS, proxy or option failure, or a deadline
        /// before the request was sent). Safe to retry on a fresh connection.
        case notProcessed
        /// The request was sent but no response status arrived (reset, GOAWAY, timeout mid-stream). libcurl
        /// 7.88 cannot tell a refused stream from a processed one here, so neither can we.
        case unknown
        /// A response status arrived; the failure came afterwards (for example while reading the body).
        case processed
    }

    private enum Kind: Sendable, Hashable {
        case easy(CurlCode)
        case multi(CurlMultiCode)
        case invalidRequest
        case clientShutdown
        case threadStart(Int32)
        case libraryLoad
    }

    private let kind: Kind
    /// What was being done: `curl_easy_init`, `setopt CURLOPT_SSLCERT`, `transfer`, …
    package let operation: String
    /// libcurl's error buffer for the transfer (often names the peer and the exact TLS problem), or our own
    /// explanation for errors that are not libcurl's.
    package let detail: String
    /// Whether the server may have processed the request.
    package let processing: Processing

    init(code: CurlCode, operation: String, detail: String = "", processing: Processing = .notProcessed) {
        self.kind = .easy(code)
        self.operation = operation
        self.detail = detail
        self.processing = processing
    }

    init(multiCode: CurlMultiCode, operation: String) {
        self.kind = .multi(multiCode)
        self.operation = operation
        self.detail = ""
        self.processing = .notProcessed
    }

    private init(kind: Kind, operation: String, detail: String, processing: Processing) {
        self.kind = kind
        self.operation = operation
        self.detail = detail
        self.processing = processing
    }

    /// The request cannot be expressed (a header with CR, LF or NUL, a bad timeout, …); nothing was sent.
    static func invalidRequest(_ detail: String) -> CurlError {
        CurlError(kind: .invalidRequest, operation: "validate request", detail: detail, processing: .notProcessed)
    }

    /// The client was shut down before the transfer finished.
    static func clientShutdown(processing: Processing) -> CurlError {
        CurlError(
            kind: .clientShutdown,
            operation: "transfer",
            detail: "the client was shut down",
            processing: processing
        )
    }

    /// libcurl could not be loaded (`dlopen`) or lacks a function Rouse calls; `detail` is the loader's text.
    static func libraryLoad(_ detail: String) -> CurlError {
        CurlError(kind: .libraryLoad, operation: "load libcurl", detail: detail, processing: .notProcessed)
    }

    static func threadStart(_ errno: Int32) -> CurlError {
        CurlError(
            kind: .threadStart(errno), operation: "pthread_create", detail: "errno \(errno)", processing: .notProcessed)
    }

    /// The libcurl easy code, when the error came from libcurl's easy interface or from a transfer.
    package var code: CurlCode? {
        if case .easy(let code) = kind { return code }
        return nil
    }

    /// The libcurl multi code, when the error came from the multi interface.
    package var multiCode: CurlMultiCode? {
        if case .multi(let code) = kind { return code }
        return nil
    }

    /// True when the connect or total deadline passed (`CURLE_OPERATION_TIMEDOUT`).
    package var isTimeout: Bool { code == .operationTimedOut }

    /// True when the request was refused before anything was sent because it could not be expressed.
    package var isInvalidRequest: Bool { kind == .invalidRequest }

    /// True when the client was shut down under the transfer.
    package var isClientShutdown: Bool { kind == .clientShutdown }

    /// One line: operation, code, libcurl's text, detail and processing.
    package var description: String {
        var text: String
        switch kind {
        case .easy(let code): text = "\(operation): CURLcode \(code.rawValue) (\(code))"
        case .multi(let code): text = "\(operation): CURLMcode \(code.rawValue) (\(code))"
        case .invalidRequest: text = "\(operation): invalid request"
        case .clientShutdown: text = "\(operation): client shut down"
        case .threadStart: text = "\(operation): could not start the transfer thread"
        case .libraryLoad: text = "\(operation): unavailable"
        }
        if !detail.isEmpty { text += ": \(detail)" }
        if kind == .libraryLoad { return text }  // nothing was ever sent: processing says nothing here
        return text + " [processing: \(processing)]"
    }
}

extension CurlError {
    /// Decides `processing` for a failed transfer from facts libcurl reports about it.
    ///
    /// - A response status arrived ⇒ processed.
    /// - The transfer never reached "pre-transfer" (the request was never sent) ⇒ not processed; this covers
    ///   connect, TLS, proxy and name failures and deadlines that expired while connecting or waiting to
    ///   multiplex.
    /// - Codes that can only happen before sending ⇒ not processed.
    /// - Everything else (resets, `CURLE_HTTP2`, `CURLE_HTTP2_STREAM`, `CURLE_RECV_ERROR`, `CURLE_SEND_ERROR`,
    ///   timeouts mid-request) ⇒ unknown; see the libcurl caveats in the APNs reference.
    static func processing(code: CurlCode, requestSent: Bool, responseStatus: Int) -> Processing {
        if responseStatus > 0 { return .processed }
        if !requestSent { return .notProcessed }
        switch code {
        case .unsupportedProtocol, .urlMalformat, .couldntResolveProxy, .couldntResolveHost, .couldntConnect,
            .sslConnectError, .sslCertProblem, .sslCipher, .peerFailedVerification, .sslCACertBadFile,
            .proxy, .unknownOption, .badFunctionArgument, .failedInit:
            return .notProcessed
        default:
            return .unknown
        }
    }
}
