import Crypto
import RouseText

/// A 256-bit data key, with a short public identifier stored in every file it seals (so a reader can tell
/// "sealed under another key" from "tampered", and pick the right key during a rotation).
package struct DataKey: Sendable {
    /// The key material.
    let key: SymmetricKey
    /// The first 8 bytes of SHA-256("rouse-state-key-id" ‖ key).
    package let id: [UInt8]

    /// A data key from 32 bytes of key material.
    package init(bytes: [UInt8]) throws(StateError) {
        guard bytes.count == 32 else {
            throw StateError(.badKey("a data key is 32 bytes, not \(bytes.count)"), file: "")
        }
        self.init(key: SymmetricKey(data: bytes))
    }

    private init(key: SymmetricKey) {
        self.key = key
        var hash = SHA256()
        hash.update(data: Array("rouse-state-key-id".utf8))
        key.withUnsafeBytes { hash.update(bufferPointer: $0) }
        id = Array(hash.finalize().prefix(8))
    }

    /// A fresh random data key.
    package static func random() -> DataKey { DataKey(key: SymmetricKey(size: .bits256)) }

    /// The key material (only for wrapping it into a credential or a key file).
    var bytes: [UInt8] { key.withUnsafeBytes { Array($0) } }

    /// The identifier as hex, for logs.
    package var idHex: String { Hex.encode(id) }

    /// The per-class key: HKDF-SHA256 of the data key with the class name as info, so the files of different
    /// classes are sealed under different keys and a class key can be dropped on its own.
    func classKey(_ protection: ProtectionClass) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: key, salt: Array("rouse-state/v1".utf8),
            info: Array("class/\(protection.rawValue)".utf8), outputByteCount: 32)
    }
}
