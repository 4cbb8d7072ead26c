import COpenSSL
import CRouseOpenSSL
import Glibc
import RouseSystem

/// The bytes of one connection: a non-blocking socket, either plain (h2c) or wrapped in OpenSSL.
/// Owns the `SSL*` (freed in deinit); the socket is closed by its connection.
final class Transport {
    enum Progress: Equatable {
        /// The TLS handshake needs the socket readable or writable again.
        case wantRead
        case wantWrite
        case done
    }

    let fd: Int32
    private let ssl: OpaquePointer?

    init(fd: Int32, tls: TLSContext?, serverName: String? = nil) throws(TLSError) {
        self.fd = fd
        guard let tls else {
            ssl = nil
            return
        }
        BrokenPipe.ignored
        guard let ssl = SSL_new(tls.ctx) else { throw TLSContext.error("SSL_new") }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        if tls.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let name = serverName {
                _ = rouse_ssl_set_tlsext_host_name(ssl, name)
                if tls.configuration.verifyPeer {
                    _ = SSL_set1_host(ssl, name)
                }
            }
        }
    }

    deinit {
        if let ssl { SSL_free(ssl) }
    }

    var isTLS: Bool { ssl != nil }

    /// Advances the TLS handshake.
    func handshake() throws(TLSError) -> Progress {
        guard let ssl else { return .done }
        ERR_clear_error()
        let r = SSL_do_handshake(ssl)
        if r == 1 { return .done }
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default: throw TLSContext.error("handshake")
        }
    }

    /// The ALPN protocol agreed on ("h2"), if any.
    var negotiatedProtocol: String? {
        guard let ssl else { return nil }
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The negotiated TLS version ("TLSv1.3").
    var tlsVersion: String? {
        guard let ssl, let v = SSL_get_version(ssl) else { return nil }
        return String(cString: v)
    }

    /// The peer's certificate and its verification result, if it presented one.
    func peerCertificate() -> PeerCertificate? {
        guard let ssl, let cert = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(cert) }
        return PeerCertificate(x509: cert, verifyResult: Int32(SSL_get_verify_result(ssl)))
    }

    /// Reads into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> Sys.IOResult {
        guard let ssl else {
            do {
                return try Sys.recv(fd, buffer)
            } catch {
                throw TransportError(kind: .io(error))
            }
        }
        ERR_clear_error()
        let r = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if r > 0 { return .bytes(Int(r)) }
        return try classify(r, operation: "read")
    }

    /// Writes from `buffer`; may write less than all of it.
    func write(_ buffer: UnsafeRawBufferPointer) throws(TransportError) -> Sys.IOResult {
        guard let ssl else {
            do {
                return try Sys.send(fd, buffer)
            } catch {
                throw TransportError(kind: .io(error))
            }
        }
        ERR_clear_error()
        let r = SSL_write(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if r > 0 { return .bytes(Int(r)) }
        return try classify(r, operation: "write")
    }

    private func classify(_ r: Int32, operation: String) throws(TransportError) -> Sys.IOResult {
        guard let ssl else { return .endOfFile }
        let code = SSL_get_error(ssl, r)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wouldBlock
        case SSL_ERROR_ZERO_RETURN:
            return .endOfFile
        case SSL_ERROR_SYSCALL:
            let e = Sys.currentErrno
            if e == 0 { return .endOfFile }
            throw TransportError(kind: .io(SystemError(call: "SSL_\(operation)", errno: e)))
        default:
            throw TransportError(kind: .tls(TLSContext.error("SSL_\(operation)")))
        }
    }
}

/// A connection's byte stream failed.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case io(SystemError)
        case tls(TLSError)
    }
    let kind: Kind

    public var description: String {
        switch kind {
        case .io(let e): return e.description
        case .tls(let e): return e.description
        }
    }
}
