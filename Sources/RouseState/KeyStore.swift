import Logging
import RouseSystem

/// Where the data key is kept at rest.
package enum KeyBackend: String, Sendable, Equatable {
    /// Wrapped by `systemd-creds` (host key and/or TPM2), file `state-key.cred`; loaded from
    /// `$CREDENTIALS_DIRECTORY/<name>` when the unit has `LoadCredentialEncrypted=`.
    case systemdCredential = "systemd-credential"
    /// A 32-byte key file `state.key`, mode 0600, owned by the agent's user.
    case keyFile = "key-file"
}

/// Which backend to use.
package enum KeyBackendPreference: String, Sendable {
    /// An existing key keeps its backend; a new key uses systemd credentials when `systemd-creds` works,
    /// else a key file.
    case auto
    /// systemd credentials only: fails with the reason when they do not work.
    case systemdCredential = "systemd-credential"
    /// A key file only.
    case keyFile = "key-file"
}

/// Keeps the data key at rest and loads it at start: creates it on first use, picks and logs the backend,
/// finds an interrupted rotation's pending key. Files live in `directory` (0700).
package struct KeyStore: Sendable {
    /// The directory holding the key (and, during a rotation, the pending key).
    package let directory: String
    /// The systemd credential name (embedded in the credential, checked on decryption).
    package let credentialName: String
    let logger: Logger
    let creds: SystemdCreds
    let credentialsDirectory: String?

    static let keyFileName = "state.key"
    static let credentialFileName = "state-key.cred"
    static let pendingSuffix = ".pending"

    /// What `load` found.
    package struct Loaded: Sendable {
        /// The committed key.
        package let current: DataKey
        /// A rotation's new key, when a rotation was interrupted before it committed.
        package let pending: DataKey?
        /// Where the key is kept.
        package let backend: KeyBackend
    }

    /// A key store in `directory`. `credentialsDirectory` `nil` means `$CREDENTIALS_DIRECTORY`; `""` means none.
    package init(
        directory: String, logger: Logger, credentialName: String = "rouse-state-key",
        systemdCreds: String = "/usr/bin/systemd-creds", withKey: String = "auto",
        credentialsDirectory: String? = nil
    ) {
        self.directory = directory
        self.logger = logger
        self.credentialName = credentialName
        self.creds = SystemdCreds(program: systemdCreds, withKey: withKey)
        self.credentialsDirectory = credentialsDirectory ?? Sys.environment("CREDENTIALS_DIRECTORY")
    }

    var writer: AtomicWriter { AtomicWriter(directory: directory) }

    /// Loads the data key, creating it when there is none; logs the backend and why it was chosen.
    package func load(preference: KeyBackendPreference = .auto) throws(StateError) -> Loaded {
        try StateError.wrapping(try Sys.makeDirectory(directory))
        _ = try writer.cleanStaleTemps()
        let backend = try choose(preference)
        let current: DataKey
        if let existing = try readKey(backend, pending: false) {
            current = existing
            logger.notice(
                "state key loaded",
                metadata: ["backend": "\(backend.rawValue)", "key-id": "\(current.idHex)", "dir": "\(directory)"])
        } else {
            current = DataKey.random()
            try writeKey(current, backend, pending: false)
            logger.notice(
                "state key created",
                metadata: ["backend": "\(backend.rawValue)", "key-id": "\(current.idHex)", "dir": "\(directory)"])
        }
        var pending: DataKey?
        do {
            pending = try readKey(backend, pending: true)
        } catch {
            // A key file with loose permissions is the operator's to fix, not ours to delete.
            if case .insecureKeyFile = error.code { throw error }
            // An unreadable pending key (it was written atomically, so only tampering gets here): roll back.
            logger.error(
                "discarded an unreadable pending rotation key",
                metadata: ["error": "\(error)", "dir": "\(directory)"])
            try writer.remove(fileName(backend, pending: true))
        }
        return Loaded(current: current, pending: pending, backend: backend)
    }

    private func choose(_ preference: KeyBackendPreference) throws(StateError) -> KeyBackend {
        let keyFileExists = try StateError.wrapping(try Sys.status("\(directory)/\(Self.keyFileName)")) != nil
        let credentialExists =
            try StateError.wrapping(try Sys.status("\(directory)/\(Self.credentialFileName)")) != nil
        switch preference {
        case .keyFile:
            logger.notice("state key backend: key file (configured)", metadata: ["backend": "key-file"])
            return .keyFile
        case .systemdCredential:
            if !credentialExists && loadedCredentialPath == nil, let reason = creds.unavailableReason() {
                throw StateError(.credentialsUnavailable(reason), file: directory)
            }
            logger.notice(
                "state key backend: systemd credential (configured)", metadata: ["backend": "systemd-credential"])
            return .systemdCredential
        case .auto:
            if keyFileExists {
                logger.notice(
                    "state key backend: key file (an existing key keeps its backend)", metadata: ["backend": "key-file"]
                )
                return .keyFile
            }
            if credentialExists || loadedCredentialPath != nil {
                logger.notice(
                    "state key backend: systemd credential (existing credential)",
                    metadata: ["backend": "systemd-credential"])
                return .systemdCredential
            }
            if let reason = creds.unavailableReason() {
                logger.warning(
                    "state key backend: key file (systemd credentials unavailable)",
                    metadata: ["backend": "key-file", "reason": "\(reason)"])
                return .keyFile
            }
            logger.notice(
                "state key backend: systemd credential (systemd-creds works)",
                metadata: ["backend": "systemd-credential", "with-key": "\(creds.withKey)"])
            return .systemdCredential
        }
    }

    /// `$CREDENTIALS_DIRECTORY/<name>` when systemd loaded the credential for this service.
    var loadedCredentialPath: String? {
        guard let credentialsDirectory, !credentialsDirectory.isEmpty else { return nil }
        let path = "\(credentialsDirectory)/\(credentialName)"
        return (try? Sys.status(path)) != nil ? path : nil
    }

    func fileName(_ backend: KeyBackend, pending: Bool) -> String {
        let base = backend == .keyFile ? Self.keyFileName : Self.credentialFileName
        return pending ? base + Self.pendingSuffix : base
    }

    /// Reads the current or pending key; `nil` when it does not exist.
    func readKey(_ backend: KeyBackend, pending: Bool) throws(StateError) -> DataKey? {
        let path = "\(directory)/\(fileName(backend, pending: pending))"
        switch backend {
        case .keyFile:
            guard let status = try StateError.wrapping(try Sys.status(path)) else { return nil }
            guard status.isRegular, status.mode & 0o077 == 0, status.uid == Sys.effectiveUID else {
                throw StateError(.insecureKeyFile(mode: status.mode, owner: status.uid), file: path)
            }
            guard let bytes = try StateError.wrapping(try Sys.readFile(path)) else { return nil }
            do {
                return try DataKey(bytes: bytes)
            } catch {
                throw StateError(.badKey("key file holds \(bytes.count) bytes, not 32"), file: path)
            }
        case .systemdCredential:
            if !pending, let loaded = loadedCredentialPath,
                let bytes = try StateError.wrapping(try Sys.readFile(loaded))
            {
                do {
                    return try DataKey(bytes: bytes)
                } catch {
                    throw StateError(.badKey("credential holds \(bytes.count) bytes, not 32"), file: loaded)
                }
            }
            guard let wrapped = try StateError.wrapping(try Sys.readFile(path)) else { return nil }
            let bytes = try creds.decrypt(wrapped, name: credentialName)
            do {
                return try DataKey(bytes: bytes)
            } catch {
                throw StateError(.badKey("credential holds \(bytes.count) bytes, not 32"), file: path)
            }
        }
    }

    /// Writes the current or pending key atomically (0600).
    func writeKey(_ key: DataKey, _ backend: KeyBackend, pending: Bool) throws(StateError) {
        let bytes: [UInt8] =
            switch backend {
            case .keyFile: key.bytes
            case .systemdCredential: try creds.encrypt(key.bytes, name: credentialName)
            }
        try writer.write(bytes, to: fileName(backend, pending: pending))
    }

    /// Makes the pending key the current one: one atomic rename, then the directory synced.
    func commitPending(_ backend: KeyBackend) throws(StateError) {
        try writer.rename(fileName(backend, pending: true), to: fileName(backend, pending: false))
    }
}
