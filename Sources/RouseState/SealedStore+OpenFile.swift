import Crypto
import RouseSystem

/// Open `completeUnlessOpen` files: iOS's "a file opened while unlocked stays accessible after the lock". Opening
/// recovers the file's own key (or makes one, for a new file) and keeps it in the returned ``OpenFile``; reads and
/// writes through it need no class key, so they go on while the session is locked. Closing is forgetting the value.
extension SealedStore {
    /// One open `completeUnlessOpen` file: its name, kind, and file key. Holds key material: keep it only as long as
    /// the file is open.
    package struct OpenFile: Sendable {
        /// The file's name in its store.
        package let name: String
        /// What the file holds.
        package let kind: String
        let keyID: [UInt8]
        let ephemeral: [UInt8]
        let key: SymmetricKey
    }

    /// Opens the `completeUnlessOpen` file `name`: an existing one needs the class's private key (the session
    /// unlocked, else `locked`); a missing one is created empty when `create` (possible while locked), else `nil`.
    /// A file of another class is refused (`wrongClass`).
    package func open(name: String, kind: String, create: Bool) throws(StateError) -> OpenFile? {
        try Self.validate(name)
        guard let bytes = try StateError.wrapping(try Sys.readFile(path(name))) else {
            guard create else { return nil }
            let (keyID, recipient) = try keys.unlessOpenRecipient(file: name)
            let (ephemeral, key) = try UnlessOpenKeys.newFileKey(for: recipient, file: name)
            let file = OpenFile(name: name, kind: kind, keyID: keyID, ephemeral: ephemeral, key: key)
            try write([], to: file)
            return file
        }
        do throws(StateError) {
            let header = try SealedFile.parseHeader(bytes, name: name, kind: kind)
            guard let ephemeral = header.ephemeral else {
                throw StateError(.wrongClass(header.protection), file: name)
            }
            let classKey = try keys.openingKey(keyID: header.keyID, header.protection, file: name)
            let key = try UnlessOpenKeys.openingKey(classKey: classKey, header: header)
            _ = try SealedFile.open(bytes, header: header, classKey: key)  // authenticated before it is trusted
            return OpenFile(name: name, kind: kind, keyID: header.keyID, ephemeral: ephemeral, key: key)
        } catch {
            if error.isIntegrityFailure { try discard(name, because: error) }
            throw error
        }
    }

    /// Replaces the content of the open `file`, sealed under its own key (no class key needed).
    package func write(_ plaintext: [UInt8], to file: OpenFile) throws(StateError) {
        let sealed = try SealedFile.seal(
            plaintext, name: file.name, kind: file.kind, protection: .completeUnlessOpen, keyID: file.keyID,
            classKey: file.key, ephemeral: file.ephemeral)
        try writer.write(sealed, to: file.name)
    }

    /// The content of the open `file`; `nil` when it was removed since. When the file was replaced since it was
    /// opened (a plain write: another file key), it is read as a closed file (`locked` while locked).
    package func read(_ file: OpenFile) throws(StateError) -> [UInt8]? {
        guard let bytes = try StateError.wrapping(try Sys.readFile(path(file.name))) else { return nil }
        let header = try SealedFile.parseHeader(bytes, name: file.name, kind: file.kind)
        guard header.ephemeral == file.ephemeral, header.keyID == file.keyID else {
            return try read(name: file.name, kind: file.kind)
        }
        do throws(StateError) {
            return try SealedFile.open(bytes, header: header, classKey: file.key)
        } catch {
            try discard(file.name, because: error)
            throw error
        }
    }
}
