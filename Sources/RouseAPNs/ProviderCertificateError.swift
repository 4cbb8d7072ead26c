/// Why a provider certificate's APNs extensions could not be read.
public struct ProviderCertificateError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case badTopicsExtension
        case noTopics
    }

    private let code: Code
    /// What exactly was wrong.
    public let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// The topics extension (`1.2.840.113635.100.6.3.6`) is not a SEQUENCE of UTF8String topics each
    /// optionally followed by a SEQUENCE of UTF8String kinds.
    public static func badTopicsExtension(_ detail: String) -> ProviderCertificateError {
        ProviderCertificateError(.badTopicsExtension, detail)
    }

    /// Neither the topics extension nor the subject UID names a topic.
    public static let noTopics = ProviderCertificateError(.noTopics, "")

    public static func == (lhs: ProviderCertificateError, rhs: ProviderCertificateError) -> Bool {
        lhs.code == rhs.code
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A one-line description.
    public var description: String {
        switch code {
        case .badTopicsExtension: "bad APNs topics extension 1.2.840.113635.100.6.3.6: \(detail)"
        case .noTopics: "provider certificate names no topic (no topics extension, no subject UID)"
        }
    }
}
