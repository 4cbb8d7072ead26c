import CNghttp2
import COpenSSL
import CRouseOpenSSL

/// One OpenSSL `SSL_CTX`, configured for HTTP/2 (TLS 1.2+, ALPN `h2`). Owns the context.
public final class TLSContext: @unchecked Sendable {  // immutable after init; OpenSSL contexts are thread-safe to use.
    let ctx: OpaquePointer
    /// Whether this context is for the server side.
    public let isServer: Bool
    let configuration: TLSConfiguration

    public init(configuration: TLSConfiguration, server: Bool) throws(TLSError) {
        guard let ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()) else {
            throw TLSContext.error("SSL_CTX_new")
        }
        self.ctx = ctx
        self.isServer = server
        self.configuration = configuration
        _ = rouse_ssl_ctx_set_min_proto_version(ctx, rouse_tls1_2_version())
        _ = rouse_ssl_ctx_set_mode(ctx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        // Servers hold many idle connections (the gateway's device channels): OpenSSL frees a connection's read and
        // write buffers while they are empty. 52.6 -> 41-43 KiB per idle channel (`rouse-bench gateway --channels
        // 1000`), no measurable cost per request in `rouse-bench mock-apns` (8.1-8.3 us either way).
        if server { _ = rouse_ssl_ctx_set_mode(ctx, Int(SSL_MODE_RELEASE_BUFFERS)) }
        rouse_ssl_ctx_set_h2_options(ctx)
        try loadCredentials()
        if server {
            try configureServer()
        } else {
            try configureClient()
        }
    }

    deinit {
        SSL_CTX_free(ctx)
    }

    static func error(_ operation: String) -> TLSError {
        var buffer = [CChar](repeating: 0, count: 256)
        rouse_ssl_last_error(&buffer, buffer.count)
        let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
        return TLSError(
            operation: operation, detail: String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    private func loadCredentials() throws(TLSError) {
        if let p12 = configuration.pkcs12File {
            try loadPKCS12(path: p12, password: configuration.pkcs12Password ?? "")
            return
        }
        if let chain = configuration.certificateChainFile {
            guard SSL_CTX_use_certificate_chain_file(ctx, chain) == 1 else {
                throw TLSContext.error("loading certificate chain \(chain)")
            }
        }
        if let key = configuration.privateKeyFile {
            guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1 else {
                throw TLSContext.error("loading private key \(key)")
            }
            guard SSL_CTX_check_private_key(ctx) == 1 else { throw TLSContext.error("key does not match certificate") }
        }
    }

    private func loadPKCS12(path: String, password: String) throws(TLSError) {
        guard let file = BIO_new_file(path, "rb") else { throw TLSContext.error("opening \(path)") }
        defer { BIO_free(file) }
        guard let p12 = d2i_PKCS12_bio(file, nil) else { throw TLSContext.error("reading PKCS#12 \(path)") }
        defer { PKCS12_free(p12) }
        var key: OpaquePointer?
        var cert: OpaquePointer?
        var chain: OpaquePointer?
        guard PKCS12_parse(p12, password, &key, &cert, &chain) == 1, let key, let cert else {
            throw TLSContext.error("decrypting PKCS#12 \(path) (wrong password?)")
        }
        defer {
            EVP_PKEY_free(key)
            X509_free(cert)
        }
        guard SSL_CTX_use_certificate(ctx, cert) == 1, SSL_CTX_use_PrivateKey(ctx, key) == 1 else {
            throw TLSContext.error("using PKCS#12 \(path)")
        }
        if let chain {
            while let extra = OPENSSL_sk_shift(chain) {
                _ = rouse_ssl_ctx_add_extra_chain_cert(ctx, OpaquePointer(extra))
            }
            OPENSSL_sk_free(chain)
        }
    }

    private func configureServer() throws(TLSError) {
        SSL_CTX_set_alpn_select_cb(
            ctx,
            { _, out, outlen, input, inlen, argument in
                guard let out, let outlen, let input else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                // nghttp2 picks "h2" from the client's list. A client that offers ALPN without h2 (curl --http1.1)
                // is refused in the handshake with a no_application_protocol alert (RFC 7301 §3.2), which its TLS
                // library reports by name. A client that offers no ALPN at all never gets here: it is served as
                // HTTP/2 if it sends the preface, as APNs does.
                // With `offersHTTP11` (a non-nil argument), a client offering `http/1.1` but not `h2` gets
                // `http/1.1` (nghttp2 answers 0 for that choice).
                var selected: UnsafeMutablePointer<UInt8>?
                var selectedLength: UInt8 = 0
                let r = nghttp2_select_next_protocol(&selected, &selectedLength, input, inlen)
                guard r == 1 || (r == 0 && argument != nil), let selected else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                out.pointee = UnsafePointer(selected)
                outlen.pointee = selectedLength
                return SSL_TLSEXT_ERR_OK
            }, configuration.offersHTTP11 ? UnsafeMutableRawPointer(bitPattern: 1) : nil)
        switch configuration.clientAuthentication {
        case .none:
            break
        case .optional, .required:
            guard let caFile = configuration.clientCAFile else {
                throw TLSError(operation: "client authentication needs a client CA file", detail: "")
            }
            guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                throw TLSContext.error("loading client CA \(caFile)")
            }
            if let names = SSL_load_client_CA_file(caFile) { SSL_CTX_set_client_CA_list(ctx, names) }
            if configuration.clientAuthentication == .required {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
            } else {
                // Accept whatever is presented; the verification result is read after the handshake.
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, { _, _ in 1 })
            }
        }
        let context = "rouse"
        _ = SSL_CTX_set_session_id_context(ctx, context, UInt32(context.utf8.count))
    }

    private func configureClient() throws(TLSError) {
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        guard SSL_CTX_set_alpn_protos(ctx, alpn, UInt32(alpn.count)) == 0 else {
            throw TLSContext.error("setting ALPN")
        }
        if configuration.verifyPeer {
            if let roots = configuration.trustRootsFile {
                guard SSL_CTX_load_verify_locations(ctx, roots, nil) == 1 else {
                    throw TLSContext.error("loading trust roots \(roots)")
                }
            } else {
                guard SSL_CTX_set_default_verify_paths(ctx) == 1 else { throw TLSContext.error("system trust store") }
            }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        } else {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        }
    }
}
