import Crypto

/// The sealed-file format (version 1): a clear header, authenticated as AES-GCM associated data, then the
/// AES-256-GCM nonce, ciphertext and tag. All integers big-endian.
///
/// ```
/// offset  size  field
/// 0       6     magic "RSTATE"
/// 6       2     format version (1)
/// 8       1     protection class (0 none, 1 until-first-unlock, 2 complete)
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
enum SealedFile {
    static let magic: [UInt8] = Array("RSTATE".utf8)
    static let formatVersion: UInt16 = 1
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

        var totalLength: Int { headerLength + SealedFile.nonceLength + ciphertextLength + SealedFile.tagLength }
    }

    /// Seals `plaintext` as the file `name` of `kind`.
    static func seal(
        _ plaintext: [UInt8], name: String, kind: String, protection: ProtectionClass, keyID: [UInt8],
        classKey: SymmetricKey
    ) throws(StateError) -> [UInt8] {
        let nameBytes = Array(name.utf8)
        let kindBytes = Array(kind.utf8)
        guard (1...255).contains(nameBytes.count), (1...255).contains(kindBytes.count) else {
            throw StateError(.invalidName("name and kind must be 1 to 255 bytes"), file: name)
        }
        var header = magic
        header.append(contentsOf: bigEndian(UInt64(formatVersion), bytes: 2))
        header.append(protection.code)
        header.append(UInt8(nameBytes.count))
        header.append(UInt8(kindBytes.count))
        header.append(0)
        header.append(contentsOf: keyID)
        header.append(contentsOf: bigEndian(UInt64(plaintext.count), bytes: 8))
        header.append(contentsOf: nameBytes)
        header.append(contentsOf: kindBytes)
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
        guard version == formatVersion else { throw StateError(.unsupportedFormatVersion(version), file: name) }
        let nameLength = Int(bytes[9])
        let kindLength = Int(bytes[10])
        let headerLength = fixedHeaderLength + nameLength + kindLength
        guard bytes.count >= headerLength else {
            throw StateError(.truncated(expected: headerLength, actual: bytes.count), file: name)
        }
        let headerName = String(decoding: bytes[fixedHeaderLength..<(fixedHeaderLength + nameLength)], as: UTF8.self)
        let headerKind = String(decoding: bytes[(fixedHeaderLength + nameLength)..<headerLength], as: UTF8.self)
        guard headerName == name, kind == nil || headerKind == kind else {
            throw StateError(.foreignFile(name: headerName, kind: headerKind), file: name)
        }
        guard let protection = ProtectionClass(code: bytes[8]) else {
            throw StateError(.authenticationFailed, file: name)
        }
        let length = readBigEndian(bytes, at: 20, bytes: 8)
        guard length <= UInt64(Int32.max) else {
            throw StateError(.authenticationFailed, file: name)
        }
        let header = Header(
            formatVersion: version, protection: protection, name: headerName, kind: headerKind,
            keyID: Array(bytes[12..<20]), ciphertextLength: Int(length), headerLength: headerLength)
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
