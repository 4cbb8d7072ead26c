import Crypto
import FoundationEssentials
import RouseAPNs
import RouseText

/// RFC 8292 VAPID: `Authorization: vapid t=<JWT>, k=<public key>`. The JWT is ES256 over the application server's
/// key `k` (an uncompressed P-256 point, base64url); its claims name the push service's origin (`aud`) and a
/// deadline (`exp`, at most 24 hours ahead). A subscription made with a VAPID key takes only messages whose `k` is
/// that key.
struct WebPushVAPID: Sendable, Equatable {
    /// The JWT (`t`).
    var token: String
    /// The key (`k`), base64url as sent.
    var key: String

    /// Longest `exp` ahead accepted (RFC 8292 §2: "MUST NOT be more than 24 hours").
    static let maxLifetimeSeconds: Int64 = 86_400

    /// Parses an `Authorization` value; `nil` when it is not the `vapid` scheme with both `t` and `k`.
    init?(authorization: String) {
        let trimmed = authorization.drop { $0 == " " }
        guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "vapid" else { return nil }
        var token: String?
        var key: String?
        for part in trimmed[trimmed.index(after: space)...].split(separator: ",") {
            let item = part.trimmingBlanks()
            guard let equals = item.firstIndex(of: "=") else { return nil }
            let name = item[..<equals].trimmingBlanks().lowercased()
            let value = item[item.index(after: equals)...].trimmingBlanks()
            switch name {
            case "t": token = value
            case "k": key = value
            default: continue
            }
        }
        guard let token, let key, !token.isEmpty, !key.isEmpty else { return nil }
        self.token = token
        self.key = key
    }

    /// Whether a subscription's VAPID key is well formed (87 base64url characters of a 65-byte uncompressed point
    /// that is on the curve).
    static func isValidKey(_ key: String) -> Bool {
        guard let bytes = Base64URL.decode(Array(key.utf8)), bytes.count == 65, bytes[0] == 4 else { return false }
        return (try? P256.Signing.PublicKey(x963Representation: bytes)) != nil
    }

    /// Checks the header against the subscription's key, the origin and the time (UNIX seconds); the reason when
    /// it does not hold (answered 403).
    func problem(subscriptionKey: String, audience: String, now: Int64) -> String? {
        guard let sent = Base64URL.decode(Array(key.utf8)), let expected = Base64URL.decode(Array(subscriptionKey.utf8))
        else { return "k is not base64url" }
        guard sent == expected else { return "k is not the key this subscription was made with" }
        guard let publicKey = try? P256.Signing.PublicKey(x963Representation: sent) else {
            return "k is not a P-256 public key"
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(Array(parts[0].utf8)),
            let claimBytes = Base64URL.decode(Array(parts[1].utf8)),
            let signatureBytes = Base64URL.decode(Array(parts[2].utf8))
        else { return "t is not a JWT (three base64url segments)" }
        guard let header = try? JSONValue.parse(headerBytes), header["alg"]?.string == "ES256" else {
            return "the JWT's alg is not ES256"
        }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8))
        else { return "the JWT's signature does not verify with k" }
        guard let claims = try? JSONValue.parse(claimBytes), claims.object != nil else {
            return "the JWT's claims are not a JSON object"
        }
        guard let aud = claims["aud"]?.string, Self.sameOrigin(aud, audience) else {
            return "aud is not \(audience)"
        }
        guard let exp = claims["exp"]?.int64 else { return "exp is missing" }
        guard exp > now else { return "the JWT expired (exp \(exp))" }
        guard exp <= now + Self.maxLifetimeSeconds else { return "exp is more than 24 hours ahead" }
        return nil
    }

    /// Origins compared as RFC 6454 serializations, case-insensitively, a trailing `/` ignored.
    private static func sameOrigin(_ a: String, _ b: String) -> Bool {
        func normal(_ s: String) -> String { (s.hasSuffix("/") ? String(s.dropLast()) : s).lowercased() }
        return normal(a) == normal(b)
    }
}
