import COpenSSL

extension PeerCertificate {
    /// Reads a certificate from a file, so a client can inspect its own credentials (an APNs provider reads
    /// the topics of its certificate before sending). `verification` is `.ok`: nothing is verified here.
    ///
    /// - Parameters:
    ///   - file: a PEM certificate (the first one in the file is read) or, with `pkcs12Password`, a PKCS#12
    ///     bundle.
    public static func read(file: String, pkcs12Password: String? = nil) throws(TLSError) -> PeerCertificate {
        guard let bio = BIO_new_file(file, "rb") else { throw TLSContext.error("opening \(file)") }
        defer { BIO_free(bio) }
        if let pkcs12Password {
            guard let p12 = d2i_PKCS12_bio(bio, nil) else { throw TLSContext.error("reading PKCS#12 \(file)") }
            defer { PKCS12_free(p12) }
            var key: OpaquePointer?
            var cert: OpaquePointer?
            guard PKCS12_parse(p12, pkcs12Password, &key, &cert, nil) == 1, let cert else {
                throw TLSContext.error("decrypting PKCS#12 \(file) (wrong password?)")
            }
            defer {
                if let key { EVP_PKEY_free(key) }
                X509_free(cert)
            }
            return PeerCertificate(x509: cert, verifyResult: X509_V_OK)
        }
        guard let cert = PEM_read_bio_X509(bio, nil, nil, nil) else {
            throw TLSContext.error("reading PEM certificate \(file)")
        }
        defer { X509_free(cert) }
        return PeerCertificate(x509: cert, verifyResult: X509_V_OK)
    }
}
