import Crypto
import Logging
import RouseSystem

/// A step of a key rotation. A fault hook is called before each; a crash there is recovered at the next
/// start by `KeyRotation.recover`.
package enum RotationStep: Sendable, Equatable, CustomStringConvertible {
    /// Before the new key is written as `<key>.pending` (the rotation's journal: its presence means
    /// "rotation in progress").
    case writePendingKey
    /// Before one file is re-sealed under the new key.
    case reseal(store: String, file: String)
    /// Every file re-sealed; before the pending key is renamed over the current one.
    case commit
    /// Committed.
    case done

    package var description: String {
        switch self {
        case .writePendingKey: "write-pending-key"
        case .reseal(let store, let file): "reseal \(store)/\(file)"
        case .commit: "commit"
        case .done: "done"
        }
    }
}

/// A hook called before each `RotationStep` (interruption tests only).
package typealias RotationFaultHook = @Sendable (RotationStep) throws(StateError) -> Void

/// Key rotation: re-seals every file of the given stores under a new data key, recoverably.
///
/// 1. The new key is written (wrapped like the current one) as `<key>.pending`, atomically. From then on new
///    files are sealed with it, and every file opens with either key (the header's key id picks it).
/// 2. Each file sealed under the old key is re-sealed under the new one, atomically, one by one.
/// 3. Commit: `<key>.pending` is renamed over `<key>` and the directory synced; the old key is forgotten.
///
/// A crash before 1 finishes leaves the old key alone (the atomic write leaves no pending key); a crash after
/// it leaves a pending key, and `recover` at the next start completes the rotation (steps 2 and 3 are
/// idempotent).
///
/// Run it inside the process that owns the key ring (the agent, on `rotate-key` over its IPC), with no write
/// in flight, or with the agent stopped: a process still holding only the old key would find the re-sealed
/// files under a key it does not hold, and discard them as `wrong-key`.
package enum KeyRotation {
    /// Rotates the key of `keyStore` (backend `backend`), re-sealing every file of `stores`.
    /// Returns the new key.
    @discardableResult
    package static func rotate(
        keyStore: KeyStore, backend: KeyBackend, ring: KeyRing, stores: [SealedStore], logger: Logger,
        faultHook: RotationFaultHook? = nil
    ) throws(StateError) -> DataKey {
        let new = DataKey.random()
        try faultHook?(.writePendingKey)
        try keyStore.writeKey(new, backend, pending: true)
        logger.notice("key rotation started", metadata: ["new-key-id": "\(new.idHex)"])
        try complete(new: new, keyStore: keyStore, backend: backend, ring: ring, stores: stores, faultHook: faultHook)
        logger.notice("key rotation committed", metadata: ["key-id": "\(new.idHex)"])
        return new
    }

    /// At start, after `KeyStore.load`: completes a rotation that was interrupted (a pending key exists).
    /// Returns whether there was one.
    @discardableResult
    package static func recover(
        loaded: KeyStore.Loaded, keyStore: KeyStore, ring: KeyRing, stores: [SealedStore], logger: Logger
    ) throws(StateError) -> Bool {
        guard let pending = loaded.pending else { return false }
        logger.warning(
            "resuming an interrupted key rotation",
            metadata: ["old-key-id": "\(loaded.current.idHex)", "new-key-id": "\(pending.idHex)"])
        try complete(
            new: pending, keyStore: keyStore, backend: loaded.backend, ring: ring, stores: stores, faultHook: nil)
        logger.notice("key rotation committed", metadata: ["key-id": "\(pending.idHex)"])
        return true
    }

    private static func complete(
        new: DataKey, keyStore: KeyStore, backend: KeyBackend, ring: KeyRing, stores: [SealedStore],
        faultHook: RotationFaultHook?
    ) throws(StateError) {
        ring.beginUsing(new)
        for store in stores {
            for name in try store.names() {
                try faultHook?(.reseal(store: store.directory, file: name))
                try reseal(name, in: store, to: new, ring: ring)
            }
        }
        try faultHook?(.commit)
        try keyStore.commitPending(backend)
        ring.keepOnly(new)
        try faultHook?(.done)
    }

    /// Re-seals one file under `new` unless it already is. Files of every protection class are re-sealed
    /// (rotation holds the data keys themselves); a file that fails its checks is discarded.
    static func reseal(_ name: String, in store: SealedStore, to new: DataKey, ring: KeyRing) throws(StateError) {
        guard let bytes = try StateError.wrapping(try Sys.readFile(store.path(name))) else { return }
        do throws(StateError) {
            let header = try SealedFile.parseHeader(bytes, name: name, kind: nil)
            if header.keyID == new.id { return }
            guard let old = ring.dataKey(id: header.keyID) else {
                throw StateError(.wrongKey(keyID: header.keyID.hex), file: name)
            }
            let opening = try UnlessOpenKeys.openingKey(classKey: old.classKey(header.protection), header: header)
            let plaintext = try SealedFile.open(bytes, header: header, classKey: opening)
            let sealed =
                header.protection == .completeUnlessOpen
                ? try UnlessOpenKeys.seal(
                    plaintext, name: name, kind: header.kind, keyID: new.id, classKey: new.classKey(header.protection))
                : try SealedFile.seal(
                    plaintext, name: name, kind: header.kind, protection: header.protection, keyID: new.id,
                    classKey: new.classKey(header.protection))
            try store.writer.write(sealed, to: name)
        } catch {
            if error.isIntegrityFailure {
                try store.discard(name, because: error)
                return
            }
            throw error
        }
    }
}
