import Crypto
import FoundationEssentials

/// An APNs provider authentication token: an ES256 JWT with header `{alg, kid}` and claims `{iss, iat}`.
///
/// Apple ("Establishing a token-based connection to APNs"): the header carries "alg: ES256" and "kid", the
/// 10-character Key ID; the claims carry "iss", the 10-character Team ID, and "iat", "the time at which you
/// generated the token, in terms of the number of seconds since Epoch, in UTC".
public struct ProviderToken: Sendable, Hashable {
    /// `kid`: the key ID.
    public var keyID: String
    /// `iss`: the team ID.
    public var teamID: String
    /// `iat`: UNIX seconds.
    public var issuedAt: Int64

    /// A token's fields.
    public init(keyID: String, teamID: String, issuedAt: Int64) {
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }

    /// Tokens longer than this are refused unparsed, bounding the work done on garbage (a real token is
    /// about 200 characters).
    public static let maxLength = 4096

    /// Reads a `.p8` (PKCS#8 PEM) ES256 private key as Apple issues it.
    public static func privateKey(pem: String) throws(ProviderTokenError) -> P256.Signing.PrivateKey {
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw .badPrivateKey(String(describing: error))
        }
    }

    /// Signs this token: `base64url(header).base64url(claims).base64url(r‖s)`.
    public func signed(with key: P256.Signing.PrivateKey) throws(ProviderTokenError) -> String {
        let header = "{\"alg\":\"ES256\",\"kid\":\"\(JSONText.escape(keyID))\"}"
        let claims = "{\"iss\":\"\(JSONText.escape(teamID))\",\"iat\":\(issuedAt)}"
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try key.signature(for: Array(signingInput.utf8))
        } catch {
            throw .badPrivateKey(String(describing: error))
        }
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Parses a token without checking its signature; bounded work, never traps.
    public static func parse(_ token: some StringProtocol) throws(ProviderTokenError) -> UnverifiedProviderToken {
        let utf8 = Array(token.utf8.prefix(maxLength + 1))
        guard utf8.count <= maxLength else { throw .tooLong }
        let parts = utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .notThreeParts }
        guard let headerBytes = Base64URL.decode(parts[0]) else { throw .badBase64URL("header") }
        guard let claimsBytes = Base64URL.decode(parts[1]) else { throw .badBase64URL("claims") }
        guard let signature = Base64URL.decode(parts[2]) else { throw .badBase64URL("signature") }
        guard let header = FlatJSONObject.parse(headerBytes) else { throw .badJSON("header") }
        guard let claims = FlatJSONObject.parse(claimsBytes) else { throw .badJSON("claims") }
        guard let alg = header.string("alg") else { throw .unsupportedAlgorithm("") }
        guard alg == "ES256" else { throw .unsupportedAlgorithm(alg) }
        guard let kid = header.string("kid") else { throw .missingKeyID }
        guard let iss = claims.string("iss") else { throw .missingIssuer }
        guard
            let iat = claims.integer("iat") ?? claims.number("iat").flatMap(Self.fractionalSeconds)
                ?? claims.string("iat").flatMap(Self.decimalSeconds)
        else {
            throw .missingIssuedAt
        }
        let signingInputCount = parts[0].count + 1 + parts[1].count
        return UnverifiedProviderToken(
            token: ProviderToken(keyID: kid, teamID: iss, issuedAt: iat),
            signingInput: Array(utf8.prefix(signingInputCount)),
            signature: signature
        )
    }

    /// `iat` written as a JSON string of decimal digits, which APNs accepts: kalyke-apns, a widely deployed Python
    /// client, has signed `{"iat":"1767225600"}` for years. Anything else (sign, fraction, blank, over 18 digits)
    /// is not a time.
    static func decimalSeconds(_ text: String) -> Int64? {
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// `iat` written as a JSON number with a fraction (or an exponent), which APNs accepts: PyJWT encodes
    /// `time.time()` as `1767225600.123456`, and APNs clients built on it (apns2, pyapns_client) have signed such
    /// tokens for years; Vapor's older APNs package did the same through its JWT library. The whole seconds count
    /// (rounded down). A number no `Int64` of seconds holds is not a time.
    static func fractionalSeconds(_ value: Double) -> Int64? {
        let seconds = value.rounded(.down)
        guard seconds.isFinite, seconds >= -9.0e18, seconds <= 9.0e18 else { return nil }
        return Int64(seconds)
    }

    /// Parses and verifies a token against `publicKey`.
    public static func verify(
        _ token: some StringProtocol,
        publicKey: P256.Signing.PublicKey
    ) throws(ProviderTokenError) -> ProviderToken {
        let parsed = try parse(token)
        guard parsed.isSignatureValid(for: publicKey) else { throw .badSignature }
        return parsed.token
    }
}

/// A parsed provider token whose signature has not been checked yet.
public struct UnverifiedProviderToken: Sendable {
    /// The header and claims.
    public var token: ProviderToken
    /// `base64url(header).base64url(claims)`, the bytes that were signed.
    public var signingInput: [UInt8]
    /// The raw signature bytes (r‖s, 64 bytes for a valid ES256 token).
    public var signature: [UInt8]

    /// Whether the ES256 signature verifies with `publicKey`.
    public func isSignatureValid(for publicKey: P256.Signing.PublicKey) -> Bool {
        guard signature.count == 64,
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
        else { return false }
        return publicKey.isValidSignature(ecdsa, for: signingInput)
    }
}
