import Crypto
import RouseAPNs

/// The fixed provider key of the APNs targets: its tokens (in the seeds) verify, so the fuzzer reaches what comes
/// after authentication. Fixed bytes, not a secret: it signs nothing outside the fuzzer.
enum FuzzKeys {
    /// The P-256 private key (scalar 0x01…01).
    static let privateKey: P256.Signing.PrivateKey? = try? P256.Signing.PrivateKey(
        rawRepresentation: [UInt8](repeating: 1, count: 32))
    /// Team and key id of the seeds' tokens.
    static let teamID = "FUZZTEAM01"
    static let keyID = "FUZZKEY001"
    /// The time every APNs input is judged at, and the seeds' `iat` (2026-01-01T00:00:00Z).
    static let now = APNsTime(seconds: 1_767_225_600)
    /// The registry the APNs targets verify against: the key above, for the topic `com.example.app`.
    static let registry: APNsKeyRegistry = {
        guard let privateKey else { return APNsKeyRegistry() }
        return APNsKeyRegistry([
            APNsSigningKey(
                teamID: teamID, keyID: keyID, publicKey: privateKey.publicKey,
                scope: .team(bundleIDs: ["com.example.app"]))
        ])
    }()
}
