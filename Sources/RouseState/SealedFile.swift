import Crypto

/// The sealed-file format (version 1): a clear header, authenticated as AES-GCM associated data, then the
/// AES-256-GCM nonce, ciphertext and tag. All integers big-endian.
///
/// ```
/// offset  size  field
/// 0       6     magic "RSTATE"
/// 6       2     format version (1; 2 for complete-unless-open, below)
/// 8       1     protection class (0 none, 1 until-first-unlock, 2 complete, 3 complete-unless-open)
/// 9       1     name length N (1…255)
/// 10      1     kind length K (1…255)
/// 11      1     reserved (0)
/// 12      8     data-key id
/// 20      8     ciphertext length L
/// 28      N     name (UTF-8): the file's own name, so a file copied or renamed over another is foreign
/// 28+N    K     kind (UTF-8): what the file holds ("preservation", "launch-record", "secret", …)
/// 28+N+K  12    nonce (random per seal)
/// …       L     ciphertext
/// …       16    GCM tag
/// ```
/// The associated data is the whole header (bytes 0 ..< 28+N+K); the file must be exactly
/// 28+N+K+12+L+16 bytes long.
///
/// Version 2 is the format of `completeUnlessOpen` files (class 3), and only of them: version 1's header followed by
/// the file's 32-byte ephemeral X25519 public key (at 28+N+K, part of the header and so authenticated), from which
/// the holder of the class's private key recovers the file key (``UnlessOpenKeys``). Files of the other classes are
/// still written as version 1, so files written before version 2 existed read as they did.
enum SealedFile {
    static let magic: [UInt8] = Array("RSTATE".utf8)
    static let formatVersion: UInt16 = 1
    /// The format of `completeUnlessOpen` files.
    static let unlessOpenFormatVersion: UInt16 = 2
    static let ephemeralLength = 32
    static let fixedHeaderLength = 28
    static let nonceLength = 12
    static let tagLength = 16

    /// A parsed, not yet authenticated header.
    struct Header: Sendable, Equatable {
        let formatVersion: UInt16
        let protection: ProtectionClass
        let name: String
        let kind: String
        let keyID: [UInt8]
        let ciphertextLength: Int
        let headerLength: Int
        /// Version 2: the file's ephemeral X25519 public key.
        var ephemeral: [UInt8]? = nil

        var totalLength: Int { headerLength + SealedFile.nonceLength + ciphertextLength + SealedFile.tagLength }
    }

    /// Seals `plaintext` as the file `name` of `kind`; `ephemeral` (version 2, `completeUnlessOpen` only) is the
    /// file's ephemeral public key and `classKey` then the file key.
    static func seal(
        _ plaintext: [UInt8], name: String, kind: String, protection: ProtectionClass, keyID: [UInt8],
        classKey: SymmetricKey, ephemeral: [UInt8]? = nil
    ) throws(StateError) -> [UInt8] {
        let nameBytes = Array(name.utf8)
        let kindBytes = Array(kind.utf8)
        guard (1...255).contains(nameBytes.count), (1...255).contains(kindBytes.count) else {
            throw StateError(.invalidName("name and kind must be 1 to 255 bytes"), file: name)
        }
        guard (ephemeral != nil) == (protection == .completeUnlessOpen),
            ephemeral.map({ $0.count == ephemeralLength }) ?? true
        else {
            throw StateError(.badKey("complete-unless-open files, and only they, carry an ephemeral key"), file: name)
        }
        var header = magic
        let version = ephemeral == nil ? formatVersion : unlessOpenFormatVersion
        header.append(contentsOf: bigEndian(UInt64(version), bytes: 2))
        header.append(protection.code)
        header.append(UInt8(nameBytes.count))
        header.append(UInt8(kindBytes.count))
        header.append(0)
        header.append(contentsOf: keyID)
        header.append(contentsOf: bigEndian(UInt64(plaintext.count), bytes: 8))
        header.append(contentsOf: nameBytes)
        header.append(contentsOf: kindBytes)
        if let ephemeral { header.append(contentsOf: ephemeral) }
        do {
            let box = try AES.GCM.seal(
                plaintext, using: classKey, nonce: AES.GCM.Nonce(), authenticating: header)
            return header + Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw StateError(.badKey("AES-GCM seal failed: \(error)"), file: name)
        }
    }

    /// Parses and checks the header of `bytes`, read from the file `name` expected to hold `kind` (any kind
    /// when `nil`, for key rotation).
    static func parseHeader(_ bytes: [UInt8], name: String, kind: String?) throws(StateError) -> Header {
        guard bytes.count >= fixedHeaderLength else {
            let prefix = bytes.prefix(magic.count)
            throw prefix.elementsEqual(magic.prefix(prefix.count))
                ? StateError(.truncated(expected: fixedHeaderLength, actual: bytes.count), file: name)
                : StateError(.notSealedFile, file: name)
        }
        guard bytes.prefix(magic.count).elementsEqual(magic) else { throw StateError(.notSealedFile, file: name) }
        let version = UInt16(readBigEndian(bytes, at: 6, bytes: 2))
        guard version == formatVersion || version == unlessOpenFormatVersion else {
            throw StateError(.unsupportedFormatVersion(version), file: name)
        }
        let nameLength = Int(bytes[9])
        let kindLength = Int(bytes[10])
        let ephemeralStart = fixedHeaderLength + nameLength + kindLength
        let headerLength = ephemeralStart + (version == unlessOpenFormatVersion ? ephemeralLength : 0)
        guard bytes.count >= headerLength else {
            throw StateError(.truncated(expected: headerLength, actual: bytes.count), file: name)
        }
        let headerName = String(decoding: bytes[fixedHeaderLength..<(fixedHeaderLength + nameLength)], as: UTF8.self)
        let headerKind = String(decoding: bytes[(fixedHeaderLength + nameLength)..<ephemeralStart], as: UTF8.self)
        guard headerName == name, kind == nil || headerKind == kind else {
            throw StateError(.foreignFile(name: headerName, kind: headerKind), file: name)
        }
        guard let protection = ProtectionClass(code: bytes[8]),
            (protection == .completeUnlessOpen) == (version == unlessOpenFormatVersion)
        else {
            throw StateError(.authenticationFailed, file: name)
        }
        let length = readBigEndian(bytes, at: 20, bytes: 8)
        guard length <= UInt64(Int32.max) else {
            throw StateError(.authenticationFailed, file: name)
        }
        let header = Header(
            formatVersion: version, protection: protection, name: headerName, kind: headerKind,
            keyID: Array(bytes[12..<20]), ciphertextLength: Int(length), headerLength: headerLength,
            ephemeral: headerLength > ephemeralStart ? Array(bytes[ephemeralStart..<headerLength]) : nil)
        if bytes.count < header.totalLength {
            throw StateError(.truncated(expected: header.totalLength, actual: bytes.count), file: name)
        }
        if bytes.count > header.totalLength {
            throw StateError(.trailingBytes(expected: header.totalLength, actual: bytes.count), file: name)
        }
        return header
    }

    /// Authenticates and decrypts a file whose header was checked by `parseHeader`.
    static func open(_ bytes: [UInt8], header: Header, classKey: SymmetricKey) throws(StateError) -> [UInt8] {
        let nonceStart = header.headerLength
        let cipherStart = nonceStart + nonceLength
        let tagStart = cipherStart + header.ciphertextLength
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: bytes[nonceStart..<cipherStart]),
                ciphertext: bytes[cipherStart..<tagStart], tag: bytes[tagStart..<(tagStart + tagLength)])
            let plaintext = try AES.GCM.open(
                box, using: classKey, authenticating: bytes[0..<header.headerLength])
            return Array(plaintext)
        } catch {
            throw StateError(.authenticationFailed, file: header.name)
        }
    }

    static func bigEndian(_ value: UInt64, bytes count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    static func readBigEndian(_ bytes: [UInt8], at offset: Int, bytes count: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<count { value = value << 8 | UInt64(bytes[offset + i]) }
        return value
    }
}
