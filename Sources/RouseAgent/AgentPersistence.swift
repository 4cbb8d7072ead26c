import FoundationEssentials
import Logging
import RouseAgentCore
import RouseState
import RouseText
import Synchronization

/// The agent's data at rest: the data key (systemd credential or 0600 key file), two sealed
/// stores — `secrets/` (device credential, durable agent state) and `state/` (preserved state and launch
/// records of the agent and its handlers) — and the preservation rules over `state/`. Opened once at start,
/// in the order `docs/state.md` prescribes: key loaded (backend logged), stale temps removed, an interrupted
/// key rotation completed.
package final class AgentPersistence: Sendable {
    /// Where the data key lives.
    package let keyStore: KeyStore
    /// The backend the key was loaded from.
    package let backend: KeyBackend
    /// The keys every store seals and opens with.
    package let ring: KeyRing
    /// Durable secrets: the device credential and the agent's durable state.
    package let secrets: SealedStore
    /// Preserved state (purgeable) and launch records.
    package let archives: SealedStore
    /// The preservation and restoration rules over ``archives``.
    package let preservation: PreservationStore
    let logger: Logger

    /// Opens (creating when missing) `<stateDirectory>/secrets`, `<stateDirectory>/state` and the key in
    /// `keyDirectory`. `credentialsDirectory` and `systemdCreds` are for tests (see ``KeyStore``). `startsUnlocked`
    /// false: the session's lock state will be reported (logind, ``SessionIntegration``), and until then only class
    /// `none` files are available.
    package init(
        stateDirectory: String, keyDirectory: String, preference: KeyBackendPreference = .auto, logger: Logger,
        systemdCreds: String = "/usr/bin/systemd-creds", credentialsDirectory: String? = nil,
        startsUnlocked: Bool = true
    ) throws(StateError) {
        self.logger = logger
        // Parents created here; a failure shows up, precisely, as the store's own mkdir error below.
        for directory in [stateDirectory, PathText.parent(keyDirectory)] {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        keyStore = KeyStore(
            directory: keyDirectory, logger: logger, systemdCreds: systemdCreds,
            credentialsDirectory: credentialsDirectory)
        let loaded = try keyStore.load(preference: preference)
        backend = loaded.backend
        ring = KeyRing(key: loaded.current)
        // Without session integration the device counts as unlocked from start; with it, logind's report decides.
        if startsUnlocked { _ = ring.report(.unlocked) }
        secrets = try SealedStore(directory: stateDirectory + "/secrets", keys: ring, logger: logger)
        archives = try SealedStore(directory: stateDirectory + "/state", keys: ring, logger: logger)
        try secrets.cleanStaleTemps()
        try archives.cleanStaleTemps()
        try KeyRotation.recover(
            loaded: loaded, keyStore: keyStore, ring: ring, stores: [secrets, archives], logger: logger)
        preservation = PreservationStore(store: archives, logger: logger, protection: .untilFirstUnlock)
    }

    /// Every store a key rotation re-seals.
    var stores: [SealedStore] { [secrets, archives] }

    /// Rotates the data key, re-sealing every file (call with no write in flight: the agent is an actor).
    /// Returns the new key's id (hex).
    package func rotateKey() throws(StateError) -> String {
        try KeyRotation.rotate(keyStore: keyStore, backend: backend, ring: ring, stores: stores, logger: logger).idHex
    }
}

/// ``AgentStateStore`` in sealed files: the device credential as the secret `device.credential`, the rest
/// of the durable state as `agent.durable`, both AES-GCM under the data key (class `none`: the agent must
/// reconnect at boot, before anyone unlocks). A plaintext `state.json` left by an older agent is migrated
/// once, then removed.
package struct SealedAgentStateStore: AgentStateStore {
    static let credentialName = "device.credential"
    static let stateName = "agent.durable"
    static let stateKind = "agent-state"

    let store: SealedStore
    let legacyPath: String?
    let logger: Logger
    /// The credential as last loaded or written: saves, once per push, skip its file unless it changed.
    private let credentialOnDisk = CredentialOnDisk()

    /// A store over `store`; `legacyPath` is the plaintext JSON file of older agents, migrated at `load`.
    package init(store: SealedStore, legacyPath: String?, logger: Logger) {
        self.store = store
        self.legacyPath = legacyPath
        self.logger = logger
    }

    /// The stored state; empty when there is none or when it failed its checks (tampered, truncated: the
    /// file is discarded and logged by the store, and the agent starts clean).
    package func load() throws -> AgentState {
        if let legacyPath, FileManager.default.fileExists(atPath: legacyPath) {
            let data = try Data(contentsOf: URL(fileURLWithPath: legacyPath))
            let state = try JSONDecoder().decode(AgentState.self, from: data)
            try save(state)
            try FileManager.default.removeItem(atPath: legacyPath)
            logger.notice("plaintext agent state migrated to sealed files", metadata: ["file": "\(legacyPath)"])
            return state
        }
        var state = AgentState()
        if let bytes = try readChecked(
            Self.stateName, kind: Self.stateKind, what: "agent state discarded: starting clean")
        {
            state = try JSONDecoder().decode(AgentState.self, from: Data(bytes))
        }
        if let bytes = try readChecked(Self.credentialName, kind: "secret", what: "device credential discarded") {
            let credential = String(decoding: bytes, as: UTF8.self)
            state.credential = credential
            credentialOnDisk.set(credential)
            // `<deviceID>.<hex>`: the device id survives a discarded state file.
            if state.deviceID == nil { state.deviceID = credential.split(separator: ".").first.map(String.init) }
        } else {
            state.credential = nil
            credentialOnDisk.set(nil)
        }
        return state
    }

    /// A sealed file's plaintext; nil when absent or when it failed its checks (the store discarded it and
    /// logged the reason; `what` says what that means for the agent).
    private func readChecked(_ name: String, kind: String, what: String) throws(StateError) -> [UInt8]? {
        do throws(StateError) {
            return try store.read(name: name, kind: kind)
        } catch {
            guard error.isIntegrityFailure else { throw error }
            logger.error("\(what)", metadata: ["file": "\(name)", "reason": "\(error.reason)", "error": "\(error)"])
            return nil
        }
    }

    /// Writes the credential (when it changed) and the rest, each sealed and atomically replaced.
    package func save(_ state: AgentState) throws {
        var rest = state
        rest.credential = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        if credentialOnDisk.differs(from: state.credential) {
            if let credential = state.credential {
                try store.write(Array(credential.utf8), name: Self.credentialName, kind: "secret")
            } else {
                try store.remove(Self.credentialName)
            }
            credentialOnDisk.set(state.credential)
        }
        try store.write(Array(try encoder.encode(rest)), name: Self.stateName, kind: Self.stateKind)
    }
}

/// What the credential file holds, once known (nil inside: no file).
private final class CredentialOnDisk: Sendable {
    private let known = Mutex<String??>(nil)

    func set(_ credential: String?) { known.withLock { $0 = .some(credential) } }

    /// True when the file may not hold `credential` (unknown yet, or another value).
    func differs(from credential: String?) -> Bool {
        known.withLock { known in
            guard case .some(let onDisk) = known else { return true }
            return onDisk != credential
        }
    }
}
