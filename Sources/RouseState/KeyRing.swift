import Crypto
import RouseText
import Synchronization

/// The data keys the process holds, and the protection-class keys derived from them that the session's
/// lock state allows. Shared by every store; thread-safe.
package final class KeyRing: Sendable {
    private struct State {
        var writing: DataKey
        var keys: [DataKey]
        var machine = ProtectionStateMachine()
        /// Derived class keys, by data-key id; only for the classes the machine allows.
        var classKeys: [[UInt8]: [ProtectionClass: SymmetricKey]] = [:]
        /// The public keys of the `completeUnlessOpen` class, by data-key id: always held (files of that class are
        /// sealed to them while locked).
        var unlessOpenPublic: [[UInt8]: Curve25519.KeyAgreement.PublicKey] = [:]

        mutating func derive(_ protection: ProtectionClass) {
            for key in keys { classKeys[key.id, default: [:]][protection] = key.classKey(protection) }
        }

        mutating func drop(_ protection: ProtectionClass) {
            for id in classKeys.keys { classKeys[id]?[protection] = nil }
        }

        mutating func rederive() {
            classKeys = [:]
            unlessOpenPublic = [:]
            for key in keys {
                let scalar = key.classKey(.completeUnlessOpen)
                unlessOpenPublic[key.id] =
                    try? scalar.withUnsafeBytes { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: $0) }
                    .publicKey
            }
            for protection in ProtectionClass.allCases where machine.isAvailable(protection) { derive(protection) }
        }
    }

    private let state: Mutex<State>

    /// A ring holding `key`, used for writing and reading. It starts locked, never unlocked: only `.none`
    /// files are available until `report(.unlocked)`.
    package init(key: DataKey) {
        var initial = State(writing: key, keys: [key])
        initial.rederive()
        state = Mutex(initial)
    }

    /// The id of the key new files are sealed with.
    package var writingKeyID: [UInt8] { state.withLock { $0.writing.id } }

    /// The ids of every key files can be opened with.
    package var keyIDs: [[UInt8]] { state.withLock { $0.keys.map(\.id) } }

    /// The protection state machine, for inspection.
    package var protection: ProtectionStateMachine { state.withLock { $0.machine } }

    /// Records a lock-state report; derives or drops class keys as the machine says. Returns its actions.
    @discardableResult
    package func report(_ lockState: LockState) -> [ProtectionStateMachine.Action] {
        state.withLock { state in
            let actions = state.machine.report(lockState)
            for action in actions {
                switch action {
                case .loadKey(let protection): state.derive(protection)
                case .dropKey(let protection): state.drop(protection)
                }
            }
            return actions
        }
    }

    /// Adds `key` as the writing key (rotation: files are sealed with it, both keys open).
    func beginUsing(_ key: DataKey) {
        state.withLock { state in
            if !state.keys.contains(where: { $0.id == key.id }) { state.keys.append(key) }
            state.writing = key
            state.rederive()
        }
    }

    /// Keeps only `key` (rotation committed or rolled back).
    func keepOnly(_ key: DataKey) {
        state.withLock { state in
            state.keys = [key]
            state.writing = key
            state.rederive()
        }
    }

    /// The data key with `id`, for re-sealing during a rotation.
    func dataKey(id: [UInt8]) -> DataKey? {
        state.withLock { state in state.keys.first { $0.id == id } }
    }

    /// The key id and class key to seal a new file of `protection` with.
    func sealingKey(_ protection: ProtectionClass, file: String) throws(StateError) -> ([UInt8], SymmetricKey) {
        let found: ([UInt8], SymmetricKey)? = state.withLock { state in
            state.classKeys[state.writing.id]?[protection].map { (state.writing.id, $0) }
        }
        guard let found else { throw StateError(.locked(protection), file: file) }
        return found
    }

    /// The key id and the `completeUnlessOpen` public key to seal a new file of that class to: held while locked.
    func unlessOpenRecipient(file: String) throws(StateError) -> ([UInt8], Curve25519.KeyAgreement.PublicKey) {
        let found: ([UInt8], Curve25519.KeyAgreement.PublicKey)? = state.withLock { state in
            state.unlessOpenPublic[state.writing.id].map { (state.writing.id, $0) }
        }
        guard let found else { throw StateError(.badKey("no complete-unless-open public key"), file: file) }
        return found
    }

    /// The class key to open a file sealed under `keyID` with `protection`.
    func openingKey(keyID: [UInt8], _ protection: ProtectionClass, file: String) throws(StateError) -> SymmetricKey {
        let result: Result<SymmetricKey, StateError> = state.withLock { state in
            guard state.keys.contains(where: { $0.id == keyID }) else {
                return .failure(StateError(.wrongKey(keyID: keyID.hex), file: file))
            }
            guard let key = state.classKeys[keyID]?[protection] else {
                return .failure(StateError(.locked(protection), file: file))
            }
            return .success(key)
        }
        return try result.get()
    }
}

extension [UInt8] {
    var hex: String { Hex.encode(self) }
}
