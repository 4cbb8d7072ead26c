import CCurl

/// A libcurl easy result code (`CURLcode`), kept open so that codes this file does not name survive verbatim.
public struct CurlCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric `CURLcode`.
    public let rawValue: UInt32

    /// Wraps a numeric `CURLcode`.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    init(_ code: CURLcode) {
        self.rawValue = code.rawValue
    }

    /// libcurl's own text for the code (`curl_easy_strerror`).
    public var description: String {
        String(cString: curl_easy_strerror(CURLcode(rawValue: rawValue)))
    }

    /// `CURLE_OK`.
    public static let ok = CurlCode(CURLE_OK)
    /// `CURLE_UNSUPPORTED_PROTOCOL`.
    public static let unsupportedProtocol = CurlCode(CURLE_UNSUPPORTED_PROTOCOL)
    /// `CURLE_URL_MALFORMAT`.
    public static let urlMalformat = CurlCode(CURLE_URL_MALFORMAT)
    /// `CURLE_COULDNT_RESOLVE_PROXY`.
    public static let couldntResolveProxy = CurlCode(CURLE_COULDNT_RESOLVE_PROXY)
    /// `CURLE_COULDNT_RESOLVE_HOST`.
    public static let couldntResolveHost = CurlCode(CURLE_COULDNT_RESOLVE_HOST)
    /// `CURLE_COULDNT_CONNECT`.
    public static let couldntConnect = CurlCode(CURLE_COULDNT_CONNECT)
    /// `CURLE_HTTP2`: a problem in the HTTP/2 framing layer (the connection, not one stream).
    public static let http2 = CurlCode(CURLE_HTTP2)
    /// `CURLE_PARTIAL_FILE`.
    public static let partialFile = CurlCode(CURLE_PARTIAL_FILE)
    /// `CURLE_WRITE_ERROR`: a write callback refused data (for example the body limit was reached).
    public static let writeError = CurlCode(CURLE_WRITE_ERROR)
    /// `CURLE_OUT_OF_MEMORY`.
    public static let outOfMemory = CurlCode(CURLE_OUT_OF_MEMORY)
    /// `CURLE_OPERATION_TIMEDOUT`: the connect or total deadline passed.
    public static let operationTimedOut = CurlCode(CURLE_OPERATION_TIMEDOUT)
    /// `CURLE_SSL_CONNECT_ERROR`.
    public static let sslConnectError = CurlCode(CURLE_SSL_CONNECT_ERROR)
    /// `CURLE_ABORTED_BY_CALLBACK`.
    public static let abortedByCallback = CurlCode(CURLE_ABORTED_BY_CALLBACK)
    /// `CURLE_GOT_NOTHING`.
    public static let gotNothing = CurlCode(CURLE_GOT_NOTHING)
    /// `CURLE_SEND_ERROR`.
    public static let sendError = CurlCode(CURLE_SEND_ERROR)
    /// `CURLE_RECV_ERROR`.
    public static let recvError = CurlCode(CURLE_RECV_ERROR)
    /// `CURLE_SSL_CERTPROBLEM`: the local client certificate could not be used.
    public static let sslCertProblem = CurlCode(CURLE_SSL_CERTPROBLEM)
    /// `CURLE_SSL_CIPHER`.
    public static let sslCipher = CurlCode(CURLE_SSL_CIPHER)
    /// `CURLE_PEER_FAILED_VERIFICATION`: the server certificate or host name did not verify.
    public static let peerFailedVerification = CurlCode(CURLE_PEER_FAILED_VERIFICATION)
    /// `CURLE_SSL_CACERT_BADFILE`.
    public static let sslCACertBadFile = CurlCode(CURLE_SSL_CACERT_BADFILE)
    /// `CURLE_HTTP2_STREAM`: one HTTP/2 stream failed (reset, refused, closed uncleanly).
    public static let http2Stream = CurlCode(CURLE_HTTP2_STREAM)
    /// `CURLE_SSL_CLIENTCERT`: the server wanted a client certificate and did not accept ours.
    public static let sslClientCert = CurlCode(CURLE_SSL_CLIENTCERT)
    /// `CURLE_PROXY`: the proxy handshake failed.
    public static let proxy = CurlCode(CURLE_PROXY)
    /// `CURLE_UNKNOWN_OPTION`: this libcurl does not know an option we set.
    public static let unknownOption = CurlCode(CURLE_UNKNOWN_OPTION)
    /// `CURLE_BAD_FUNCTION_ARGUMENT`.
    public static let badFunctionArgument = CurlCode(CURLE_BAD_FUNCTION_ARGUMENT)
    /// `CURLE_FAILED_INIT`.
    public static let failedInit = CurlCode(CURLE_FAILED_INIT)
}

/// A libcurl multi result code (`CURLMcode`), kept open like ``CurlCode``.
public struct CurlMultiCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric `CURLMcode`.
    public let rawValue: Int32

    /// Wraps a numeric `CURLMcode`.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    init(_ code: CURLMcode) {
        self.rawValue = code.rawValue
    }

    /// libcurl's own text for the code (`curl_multi_strerror`).
    public var description: String {
        String(cString: curl_multi_strerror(CURLMcode(rawValue: rawValue)))
    }

    /// `CURLM_OK`.
    public static let ok = CurlMultiCode(CURLM_OK)
}
