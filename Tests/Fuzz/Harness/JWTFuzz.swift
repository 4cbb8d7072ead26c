import Crypto
import RouseAPNs

/// The provider token (JWT) parser: `ProviderToken.parse` (base64url, the flat JSON of header and claims, `alg`,
/// `kid`, `iss`, `iat` in each accepted form) and the ES256 check against the fixed key, on the raw token text.
/// A parsed token's claims must survive signing again (`signed(with:)` then `parse`).
enum JWTFuzz {
    static let target = FuzzTarget(
        name: "jwt",
        summary: "ProviderToken.parse and the ES256 signature check of a provider token",
        run: run)

    static func run(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let parsed = try? ProviderToken.parse(text) else { return }
        if let key = FuzzKeys.privateKey {
            _ = parsed.isSignatureValid(for: key.publicKey)
            // What was read can be written again and reads back the same.
            if let resigned = try? parsed.token.signed(with: key) {
                guard let again = try? ProviderToken.parse(resigned), again.token == parsed.token else {
                    fatalError("jwt: claims \(parsed.token) do not survive signing")
                }
            }
        }
    }
}
