import Foundation
import InMemoryLogging
import Logging
import Testing

@testable import RouseState

/// A temp directory with a key directory and a store directory, a key-file key, and an in-memory log.
struct StateFixture {
    let root: String
    let keyDirectory: String
    let storeDirectory: String
    let log = InMemoryLogHandler()
    let logger: Logger

    init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-state-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        root = base.path
        keyDirectory = root + "/keys"
        storeDirectory = root + "/state"
        var logger = Logger(label: "test") { [log] _ in log }
        logger.logLevel = .debug
        self.logger = logger
    }

    func keyStore(systemdCreds: String = "/nonexistent/systemd-creds") -> KeyStore {
        KeyStore(directory: keyDirectory, logger: logger, systemdCreds: systemdCreds, credentialsDirectory: "")
    }

    /// Loads (or creates) the key-file key and opens the store over it.
    func open(faultHook: WriteFaultHook? = nil) throws -> (SealedStore, KeyRing) {
        let loaded = try keyStore().load(preference: .keyFile)
        let ring = KeyRing(key: loaded.current)
        return (try SealedStore(directory: storeDirectory, keys: ring, logger: logger, faultHook: faultHook), ring)
    }

    func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: storeDirectory + "/" + name)))
    }

    func overwrite(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: storeDirectory + "/" + name))
    }

    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: storeDirectory + "/" + name) }

    /// Messages logged at `level` or above, with their metadata rendered.
    func lines(atLeast level: Logger.Level = .notice) -> [String] {
        log.entries.filter { $0.level >= level }.map { entry in
            let metadata = entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            return ([entry.message.description] + metadata).joined(separator: " ")
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// A simulated crash thrown by fault hooks.
func crash(_ step: String) -> StateError { StateError(.simulatedCrash(step), file: "") }
