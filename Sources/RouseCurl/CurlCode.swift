import CCurl
import CRouseCurl

/// A libcurl easy result code (`CURLcode`), kept open so that codes this file does not name survive verbatim.
package struct CurlCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric `CURLcode`.
    package let rawValue: UInt32

    /// Wraps a numeric `CURLcode`.
    package init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    init(_ code: CURLcode) {
        self.rawValue = code.rawValue
    }

    /// libcurl's own text for the code (`curl_easy_strerror`).
    package var description: String {
        String(cString: rouse_curl_easy_strerror(CURLcode(rawValue: rawValue)))
    }

    /// `CURLE_OK`.
    package static let ok = CurlCode(CURLE_OK)
    /// `CURLE_UNSUPPORTED_PROTOCOL`.
    package static let unsupportedProtocol = CurlCode(CURLE_UNSUPPORTED_PROTOCOL)
    /// `CURLE_URL_MALFORMAT`.
    package static let urlMalformat = CurlCode(CURLE_URL_MALFORMAT)
    /// `CURLE_COULDNT_RESOLVE_PROXY`.
    package static let couldntResolveProxy = CurlCode(CURLE_COULDNT_RESOLVE_PROXY)
    /// `CURLE_COULDNT_RESOLVE_HOST`.
    package static let couldntResolveHost = CurlCode(CURLE_COULDNT_RESOLVE_HOST)
    /// `CURLE_COULDNT_CONNECT`.
    package static let couldntConnect = CurlCode(CURLE_COULDNT_CONNECT)
    /// `CURLE_HTTP2`: a problem in the HTTP/2 framing layer (the connection, not one stream).
    package static let http2 = CurlCode(CURLE_HTTP2)
    /// `CURLE_PARTIAL_FILE`.
    package static let partialFile = CurlCode(CURLE_PARTIAL_FILE)
    /// `CURLE_WRITE_ERROR`: a write callback refused data (for example the body limit was reached).
    package static let writeError = CurlCode(CURLE_WRITE_ERROR)
    /// `CURLE_OUT_OF_MEMORY`.
    package static let outOfMemory = CurlCode(CURLE_OUT_OF_MEMORY)
    /// `CURLE_OPERATION_TIMEDOUT`: the connect or total deadline passed.
    package static let operationTimedOut = CurlCode(CURLE_OPERATION_TIMEDOUT)
    /// `CURLE_SSL_CONNECT_ERROR`.
    package static let sslConnectError = CurlCode(CURLE_SSL_CONNECT_ERROR)
    /// `CURLE_ABORTED_BY_CALLBACK`.
    package static let abortedByCallback = CurlCode(CURLE_ABORTED_BY_CALLBACK)
    /// `CURLE_GOT_NOTHING`.
    package static let gotNothing = CurlCode(CURLE_GOT_NOTHING)
    /// `CURLE_SEND_ERROR`.
    package static let sendError = CurlCode(CURLE_SEND_ERROR)
    /// `CURLE_RECV_ERROR`.
    package static let recvError = CurlCode(CURLE_RECV_ERROR)
    /// `CURLE_SSL_CERTPROBLEM`: the local client certificate could not be used.
    package static let sslCertProblem = CurlCode(CURLE_SSL_CERTPROBLEM)
    /// `CURLE_SSL_CIPHER`.
    package static let sslCipher = CurlCode(CURLE_SSL_CIPHER)
    /// `CURLE_PEER_FAILED_VERIFICATION`: the server certificate or host name did not verify.
    package static let peerFailedVerification = CurlCode(CURLE_PEER_FAILED_VERIFICATION)
    /// `CURLE_SSL_CACERT_BADFILE`.
    package static let sslCACertBadFile = CurlCode(CURLE_SSL_CACERT_BADFILE)
    /// `CURLE_HTTP2_STREAM`: one HTTP/2 stream failed (reset, refused, closed uncleanly).
    package static let http2Stream = CurlCode(CURLE_HTTP2_STREAM)
    /// `CURLE_SSL_CLIENTCERT`: the server wanted a client certificate and did not accept ours.
    package static let sslClientCert = CurlCode(CURLE_SSL_CLIENTCERT)
    /// `CURLE_PROXY`: the proxy handshake failed.
    package static let proxy = CurlCode(CURLE_PROXY)
    /// `CURLE_UNKNOWN_OPTION`: this libcurl does not know an option we set.
    package static let unknownOption = CurlCode(CURLE_UNKNOWN_OPTION)
    /// `CURLE_BAD_FUNCTION_ARGUMENT`.
    package static let badFunctionArgument = CurlCode(CURLE_BAD_FUNCTION_ARGUMENT)
    /// `CURLE_FAILED_INIT`.
    package static let failedInit = CurlCode(CURLE_FAILED_INIT)
}

/// A libcurl multi result code (`CURLMcode`), kept open like ``CurlCode``.
package struct CurlMultiCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric `CURLMcode`.
    package let rawValue: Int32

    /// Wraps a numeric `CURLMcode`.
    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    init(_ code: CURLMcode) {
        self.rawValue = code.rawValue
    }

    /// libcurl's own text for the code (`curl_multi_strerror`).
    package var description: String {
        String(cString: rouse_curl_multi_strerror(CURLMcode(rawValue: rawValue)))
    }

    /// `CURLM_OK`.
    package static let ok = CurlMultiCode(CURLM_OK)
}
