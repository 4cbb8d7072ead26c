import Crypto

/// The public-key scheme of `completeUnlessOpen` (ECIES-like, X25519 + HKDF-SHA256): the class's private key is the
/// data key's class key for `completeUnlessOpen` read as an X25519 scalar; its public key is always held. Each file
/// gets an ephemeral X25519 key pair; the file key is HKDF of the agreement between the ephemeral private key and the
/// class's public key, salted with both public keys. The ephemeral public key is stored in the file's header, so the
/// holder of the class's private key (session unlocked) recovers the file key; the writer forgets the ephemeral
/// private key at once. A file can therefore be created while locked and read only after unlock.
enum UnlessOpenKeys {
    /// The class's key pair from the data key's class key.
    static func privateKey(_ classKey: SymmetricKey, file: String) throws(StateError)
        -> Curve25519.KeyAgreement.PrivateKey
    {
        do {
            return try classKey.withUnsafeBytes { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: $0) }
        } catch {
            throw StateError(.badKey("X25519 private key: \(error)"), file: file)
        }
    }

    /// A fresh file key for a file sealed to `recipient`: the ephemeral public key to store, and the file key.
    static func newFileKey(for recipient: Curve25519.KeyAgreement.PublicKey, file: String) throws(StateError)
        -> (ephemeral: [UInt8], key: SymmetricKey)
    {
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let publicBytes = Array(ephemeral.publicKey.rawRepresentation)
        do {
            let shared = try ephemeral.sharedSecretFromKeyAgreement(with: recipient)
            return (publicBytes, fileKey(shared, ephemeral: publicBytes, recipient: recipient))
        } catch {
            throw StateError(.badKey("X25519 agreement: \(error)"), file: file)
        }
    }

    /// The file key of a file whose header holds `ephemeral`, with the class's private key.
    static func fileKey(
        ephemeral: [UInt8], classPrivate: Curve25519.KeyAgreement.PrivateKey, file: String
    ) throws(StateError) -> SymmetricKey {
        do {
            let sender = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeral)
            let shared = try classPrivate.sharedSecretFromKeyAgreement(with: sender)
            return fileKey(shared, ephemeral: ephemeral, recipient: classPrivate.publicKey)
        } catch {
            throw StateError(.authenticationFailed, file: file)
        }
    }

    private static func fileKey(
        _ shared: SharedSecret, ephemeral: [UInt8], recipient: Curve25519.KeyAgreement.PublicKey
    ) -> SymmetricKey {
        shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: ephemeral + Array(recipient.rawRepresentation),
            sharedInfo: Array("rouse-state/complete-unless-open/file".utf8), outputByteCount: 32)
    }

    /// The key that opens a file with `header`: the class key itself, or (version 2) the file key recovered with it.
    static func openingKey(classKey: SymmetricKey, header: SealedFile.Header) throws(StateError) -> SymmetricKey {
        guard let ephemeral = header.ephemeral else { return classKey }
        let classPrivate = try privateKey(classKey, file: header.name)
        return try fileKey(ephemeral: ephemeral, classPrivate: classPrivate, file: header.name)
    }

    /// Seals `plaintext` to the `completeUnlessOpen` public key of the data key whose class key is `classKey`
    /// (key rotation, which holds the data keys themselves).
    static func seal(
        _ plaintext: [UInt8], name: String, kind: String, keyID: [UInt8], classKey: SymmetricKey
    ) throws(StateError) -> [UInt8] {
        let recipient = try privateKey(classKey, file: name).publicKey
        let (ephemeral, key) = try newFileKey(for: recipient, file: name)
        return try SealedFile.seal(
            plaintext, name: name, kind: kind, protection: .completeUnlessOpen, keyID: keyID, classKey: key,
            ephemeral: ephemeral)
    }
}
