/// Why a provider token (JWT) could not be parsed, verified or signed.
public struct ProviderTokenError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case tooLong
        case notThreeParts
        case badBase64URL
        case badJSON
        case unsupportedAlgorithm
        case missingKeyID
        case missingIssuer
        case missingIssuedAt
        case badSignature
        case badPrivateKey
    }

    private let code: Code
    /// Which part of the token the error is about ("header", "claims", "signature"), or the detail.
    public let detail: String

    private init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The token is longer than `ProviderToken.maxLength`; it was not parsed.
    public static let tooLong = ProviderTokenError(.tooLong)
    /// The token is not `header.claims.signature`.
    public static let notThreeParts = ProviderTokenError(.notThreeParts)
    /// A segment is not unpadded base64url.
    public static func badBase64URL(_ part: String) -> ProviderTokenError { ProviderTokenError(.badBase64URL, part) }
    /// A segment is not a JSON object.
    public static func badJSON(_ part: String) -> ProviderTokenError { ProviderTokenError(.badJSON, part) }
    /// The header's `alg` is not `ES256` ("APNs supports only provider authentication tokens that are signed
    /// with the ES256 algorithm").
    public static func unsupportedAlgorithm(_ alg: String) -> ProviderTokenError {
        ProviderTokenError(.unsupportedAlgorithm, alg)
    }
    /// The header has no string `kid`.
    public static let missingKeyID = ProviderTokenError(.missingKeyID)
    /// The claims have no string `iss`.
    public static let missingIssuer = ProviderTokenError(.missingIssuer)
    /// The claims have no integer `iat`.
    public static let missingIssuedAt = ProviderTokenError(.missingIssuedAt)
    /// The ES256 signature does not verify with the key (or is not 64 bytes).
    public static let badSignature = ProviderTokenError(.badSignature)
    /// The `.p8` PEM could not be read as a P-256 private key.
    public static func badPrivateKey(_ detail: String) -> ProviderTokenError {
        ProviderTokenError(.badPrivateKey, detail)
    }

    public static func == (lhs: ProviderTokenError, rhs: ProviderTokenError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A one-line description.
    public var description: String {
        switch code {
        case .tooLong: "provider token too long"
        case .notThreeParts: "provider token is not three dot-separated parts"
        case .badBase64URL: "provider token \(detail) is not base64url"
        case .badJSON: "provider token \(detail) is not a JSON object"
        case .unsupportedAlgorithm: "provider token alg '\(detail)' is not ES256"
        case .missingKeyID: "provider token header has no kid"
        case .missingIssuer: "provider token claims have no iss"
        case .missingIssuedAt: "provider token claims have no integer iat (a number, or a string of decimal digits)"
        case .badSignature: "provider token signature does not verify"
        case .badPrivateKey: "cannot read the ES256 private key: \(detail)"
        }
    }
}
