import Logging
import RouseSystem

/// A directory of sealed files: every file encrypted with AES-GCM under the key ring's data key, its name,
/// kind and format version authenticated, written atomically and durably. A file that fails its checks
/// (tampered, truncated, foreign, unknown format, wrong key) is reported with a precise error, logged and
/// discarded, never half-used.
package struct SealedStore: Sendable {
    /// The directory holding the files (created 0700 if missing).
    package let directory: String
    /// The keys files are sealed and opened with.
    package let keys: KeyRing
    let logger: Logger
    let writer: AtomicWriter

    /// A store over `directory`. `faultHook` is called before each write step (crash tests only).
    package init(
        directory: String, keys: KeyRing, logger: Logger, faultHook: WriteFaultHook? = nil
    ) throws(StateError) {
        try StateError.wrapping(try Sys.makeDirectory(directory))
        self.directory = directory
        self.keys = keys
        self.logger = logger
        self.writer = AtomicWriter(directory: directory, faultHook: faultHook)
    }

    /// Removes the temp files interrupted writes left; call once at start, before anything else.
    @discardableResult
    package func cleanStaleTemps() throws(StateError) -> [String] {
        let stale = try writer.cleanStaleTemps()
        for name in stale {
            logger.notice("removed a stale temp file", metadata: ["file": "\(directory)/\(name)"])
        }
        return stale
    }

    /// Seals `plaintext` and atomically replaces the file `name` with it.
    /// Throws `locked` when the class key of `protection` is not held (never for `completeUnlessOpen`, sealed to
    /// its always-held public key).
    package func write(
        _ plaintext: [UInt8], name: String, kind: String, protection: ProtectionClass = .none
    ) throws(StateError) {
        try Self.validate(name)
        let sealed: [UInt8]
        if protection == .completeUnlessOpen {
            // Sealed to the class's public key, held while locked: a new file can be written, not read.
            let (keyID, recipient) = try keys.unlessOpenRecipient(file: name)
            let (ephemeral, fileKey) = try UnlessOpenKeys.newFileKey(for: recipient, file: name)
            sealed = try SealedFile.seal(
                plaintext, name: name, kind: kind, protection: protection, keyID: keyID, classKey: fileKey,
                ephemeral: ephemeral)
        } else {
            let (keyID, classKey) = try keys.sealingKey(protection, file: name)
            sealed = try SealedFile.seal(
                plaintext, name: name, kind: kind, protection: protection, keyID: keyID, classKey: classKey)
        }
        try writer.write(sealed, to: name)
    }

    /// The plaintext of the file `name`, which must hold `kind`; `nil` when there is no such file.
    /// A file that fails a check is discarded (and logged), then its precise error thrown; `locked` leaves the
    /// file in place.
    package func read(name: String, kind: String) throws(StateError) -> [UInt8]? {
        try Self.validate(name)
        guard let bytes = try StateError.wrapping(try Sys.readFile(path(name))) else { return nil }
        do throws(StateError) {
            let header = try SealedFile.parseHeader(bytes, name: name, kind: kind)
            let classKey = try keys.openingKey(keyID: header.keyID, header.protection, file: name)
            let opening = try UnlessOpenKeys.openingKey(classKey: classKey, header: header)
            return try SealedFile.open(bytes, header: header, classKey: opening)
        } catch {
            if error.isIntegrityFailure { try discard(name, because: error) }
            throw error
        }
    }

    /// Removes the file `name` durably; `false` when it did not exist.
    @discardableResult
    package func remove(_ name: String) throws(StateError) -> Bool {
        try Self.validate(name)
        return try writer.remove(name)
    }

    /// Removes a file that cannot be trusted, with a log line saying why.
    func discard(_ name: String, because error: StateError) throws(StateError) {
        logger.error(
            "discarded a sealed file that failed its checks",
            metadata: ["file": "\(directory)/\(name)", "reason": "\(error.reason)", "error": "\(error)"])
        try writer.remove(name)
    }

    /// The names of the sealed files (temp files excluded).
    package func names() throws(StateError) -> [String] {
        try StateError.wrapping(try Sys.directoryEntries(directory)).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// Whether the file `name` exists.
    package func exists(_ name: String) throws(StateError) -> Bool {
        try StateError.wrapping(try Sys.status(path(name))) != nil
    }

    func path(_ name: String) -> String { "\(directory)/\(name)" }

    /// File names are one path component of `[A-Za-z0-9._@-]`, not starting with a dot (dot files are
    /// temp files and rotation bookkeeping).
    static func validate(_ name: String) throws(StateError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D || byte == 0x40
        }
        guard allowed, !name.isEmpty, name.utf8.count <= 200, !name.hasPrefix(".") else {
            throw StateError(
                .invalidName("one component of [A-Za-z0-9._@-], 1 to 200 bytes, no leading dot"), file: name)
        }
    }
}
