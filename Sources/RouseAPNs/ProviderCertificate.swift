import SwiftASN1

/// A provider client certificate as the APNs server sees it after the TLS handshake.
///
/// The HTTP/2 kernel extracts the subject `UID` and the extension values (DER, keyed by dotted OID) with
/// OpenSSL and passes its verification outcome; this type reads Apple's APNs extensions from them.
public struct ProviderCertificate: Sendable, Hashable {
    /// The outcome of the TLS client-certificate verification.
    public enum Verification: Sendable, Hashable {
        /// Chain verified, within validity.
        case ok
        /// The certificate (or its chain) is expired.
        case expired
        /// Not valid yet (its notBefore is in the future).
        case notYetValid
        /// Issued by a CA the server does not trust.
        case unknownCA
        /// Any other verification failure, with the library's message.
        case failed(String)
    }

    /// APNs topics: "The push topics a certificate may use are listed in its extensions
    /// 1.2.840.113635.100.6.3.6 and .3.4" [SEND].
    public static let topicsOID = "1.2.840.113635.100.6.3.6"
    /// Development (sandbox) environment marker (node-apn `lib/credentials/certificate/oids.js`).
    public static let developmentOID = "1.2.840.113635.100.6.3.1"
    /// Production environment marker.
    public static let productionOID = "1.2.840.113635.100.6.3.2"

    /// The subject `UID` (the bundle ID for app certificates, the MDM topic for MDM certificates).
    public var subjectUID: String?
    /// The topics the certificate may push to, in certificate order.
    public var topics: [String]
    /// For each topic, the kinds listed after it in the extension (e.g. `app`, `voip`, `complication`).
    public var topicKinds: [String: [String]]
    /// The environments the certificate is valid for.
    public var environments: Set<APNsEnvironment>
    /// The TLS verification outcome.
    public var verification: Verification

    /// A certificate from already-known fields.
    public init(
        subjectUID: String?,
        topics: [String],
        environments: Set<APNsEnvironment>,
        verification: Verification = .ok
    ) {
        self.subjectUID = subjectUID
        self.topics = topics
        self.topicKinds = [:]
        self.environments = environments
        self.verification = verification
    }

    /// Reads the certificate from its subject UID and extension values (DER of `extnValue`'s contents,
    /// keyed by dotted OID).
    ///
    /// Topics come from `1.2.840.113635.100.6.3.6` (a SEQUENCE of UTF8String topics, each optionally
    /// followed by a SEQUENCE of UTF8String kinds); without it, the subject UID is the single topic.
    /// Environments come from the presence of `.3.1` (sandbox) and `.3.2` (production).
    public init(
        subjectUID: String?,
        extensions: [String: [UInt8]],
        verification: Verification
    ) throws(ProviderCertificateError) {
        self.subjectUID = subjectUID
        self.verification = verification
        var environments = Set<APNsEnvironment>()
        if extensions[Self.developmentOID] != nil { environments.insert(.sandbox) }
        if extensions[Self.productionOID] != nil { environments.insert(.production) }
        self.environments = environments
        if let der = extensions[Self.topicsOID] {
            let parsed = try Self.parseTopics(der)
            topics = parsed.topics
            topicKinds = parsed.kinds
        } else if let subjectUID, !subjectUID.isEmpty {
            topics = [subjectUID]
            topicKinds = [:]
        } else {
            throw .noTopics
        }
        if topics.isEmpty { throw .noTopics }
    }

    /// Like `init(subjectUID:extensions:verification:)`, but never fails: a certificate whose APNs extensions
    /// cannot be read comes back with `verification == .failed(reason)`, so connections using it get
    /// 403 BadCertificate ("The certificate is invalid").
    public static func reading(
        subjectUID: String?,
        extensions: [String: [UInt8]],
        verification: Verification
    ) -> ProviderCertificate {
        do {
            return try ProviderCertificate(subjectUID: subjectUID, extensions: extensions, verification: verification)
        } catch {
            return ProviderCertificate(
                subjectUID: subjectUID,
                topics: [],
                environments: [],
                verification: .failed(error.description)
            )
        }
    }

    /// Whether the certificate lists several topics (then a request without `apns-topic` gets MissingTopic).
    public var isMultiTopic: Bool { topics.count > 1 }

    /// The topic APNs uses when a request has no `apns-topic`: "APNs uses the certificate's bundle ID as the
    /// default topic" — only for single-topic certificates.
    public var defaultTopic: String? { isMultiTopic ? nil : topics.first }

    /// Parses the topics extension value. Accepts the value wrapped in one OCTET STRING too.
    static func parseTopics(_ der: [UInt8]) throws(ProviderCertificateError) -> (
        topics: [String], kinds: [String: [String]]
    ) {
        do {
            var root = try DER.parse(der)
            if root.identifier == .octetString, case .primitive(let inner) = root.content {
                root = try DER.parse(inner)
            }
            guard root.identifier == .sequence, case .constructed(let children) = root.content else {
                throw ProviderCertificateError.badTopicsExtension("not a SEQUENCE")
            }
            var topics: [String] = []
            var kinds: [String: [String]] = [:]
            for node in children {
                if node.identifier == .utf8String {
                    topics.append(String(try ASN1UTF8String(derEncoded: node)))
                } else if node.identifier == .sequence, case .constructed(let kindNodes) = node.content {
                    guard let topic = topics.last else {
                        throw ProviderCertificateError.badTopicsExtension("kinds before any topic")
                    }
                    var list: [String] = []
                    for kindNode in kindNodes {
                        guard kindNode.identifier == .utf8String else {
                            throw ProviderCertificateError.badTopicsExtension("kind is not a UTF8String")
                        }
                        list.append(String(try ASN1UTF8String(derEncoded: kindNode)))
                    }
                    kinds[topic] = list
                } else {
                    throw ProviderCertificateError.badTopicsExtension("unexpected element \(node.identifier)")
                }
            }
            return (topics, kinds)
        } catch let error as ProviderCertificateError {
            throw error
        } catch {
            throw .badTopicsExtension(String(describing: error))
        }
    }
}
