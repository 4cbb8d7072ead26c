import COpenSSL

/// What a server learned about a client certificate: enough for the application to decide (APNs provider
/// certificates carry their topics and environments in extensions).
public struct PeerCertificate: Sendable {
    /// The OpenSSL verification outcome for the presented chain.
    public enum Verification: Sendable, Equatable {
        case ok
        case expired
        case notYetValid
        case unknownIssuer
        case other(code: Int32, message: String)
    }

    /// DER encoding of the certificate.
    public let der: [UInt8]
    /// The subject's `UID` (0.9.2342.19200300.100.1.1) attribute, the bundle id for APNs certificates.
    public let subjectUID: String?
    /// The subject's common name.
    public let subjectCommonName: String?
    /// Extension values (the DER inside the OCTET STRING) by dotted OID.
    public let extensions: [String: [UInt8]]
    /// Chain verification against the server's client CA.
    public let verification: Verification

    init(x509: OpaquePointer, verifyResult: Int32) {
        var derPointer: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(x509, &derPointer)
        if length > 0, let derPointer {
            der = Array(UnsafeBufferPointer(start: derPointer, count: Int(length)))
            CRYPTO_free(derPointer, #fileID, #line)
        } else {
            der = []
        }
        let name = X509_get_subject_name(x509)
        subjectUID = PeerCertificate.nameEntry(name, nid: NID_userId)
        subjectCommonName = PeerCertificate.nameEntry(name, nid: NID_commonName)
        var extensions: [String: [UInt8]] = [:]
        let count = X509_get_ext_count(x509)
        var oid = [CChar](repeating: 0, count: 128)
        for i in 0..<max(count, 0) {
            guard let ext = X509_get_ext(x509, i), let object = X509_EXTENSION_get_object(ext),
                let data = X509_EXTENSION_get_data(ext)
            else { continue }
            let n = OBJ_obj2txt(&oid, Int32(oid.count), object, 1)
            guard n > 0 else { continue }
            let key = String(
                decoding: oid[..<Int(min(n, Int32(oid.count - 1)))].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let bytes = ASN1_STRING_get0_data(data)
            let size = ASN1_STRING_length(data)
            extensions[key] = bytes.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(size, 0)))) } ?? []
        }
        self.extensions = extensions
        switch verifyResult {
        case X509_V_OK: verification = .ok
        case X509_V_ERR_CERT_HAS_EXPIRED: verification = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: verification = .notYetValid
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
            X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            verification = .unknownIssuer
        default:
            let message = X509_verify_cert_error_string(Int(verifyResult)).map { String(cString: $0) } ?? ""
            verification = .other(code: verifyResult, message: message)
        }
    }

    private static func nameEntry(_ name: OpaquePointer?, nid: Int32) -> String? {
        guard let name else { return nil }
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry),
            let bytes = ASN1_STRING_get0_data(data)
        else { return nil }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))), as: UTF8.self)
    }
}
