import Foundation
import Logging
import Synchronization
import Testing

@testable import RouseState

@Suite("Key rotation")
struct KeyRotationTests {
    /// Two stores with a few files, one of them `complete` (re-sealed even while locked).
    func populate(_ fixture: StateFixture, backend: KeyBackendPreference, creds: String) throws
        -> (KeyStore, KeyStore.Loaded, KeyRing, [SealedStore])
    {
        let keyStore = fixture.keyStore(systemdCreds: creds)
        let loaded = try keyStore.load(preference: backend)
        let ring = KeyRing(key: loaded.current)
        ring.report(.unlocked)
        let a = try SealedStore(directory: fixture.storeDirectory, keys: ring, logger: fixture.logger)
        let b = try SealedStore(directory: fixture.root + "/secrets", keys: ring, logger: fixture.logger)
        for i in 0..<3 { try a.write(Array("a\(i)".utf8), name: "h\(i).state", kind: "preservation") }
        try b.write(Array("credential".utf8), name: "device.credential", kind: "secret", protection: .complete)
        ring.report(.locked)
        return (keyStore, loaded, ring, [a, b])
    }

    func expectAllReadable(_ fixture: StateFixture, _ stores: [SealedStore], keyID: [UInt8]) throws {
        for (i, name) in ["h0.state", "h1.state", "h2.state"].enumerated() {
            #expect(try stores[0].read(name: name, kind: "preservation") == Array("a\(i)".utf8))
            let header = try SealedFile.parseHeader(try fixture.bytes(name), name: name, kind: nil)
            #expect(header.keyID == keyID)
        }
        stores[1].keys.report(.unlocked)
        #expect(try stores[1].read(name: "device.credential", kind: "secret") == Array("credential".utf8))
    }

    @Test("rotate re-seals every file under a new key and forgets the old one")
    func rotate() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (keyStore, loaded, ring, stores) = try populate(fixture, backend: .keyFile, creds: "/nonexistent")
        let new = try KeyRotation.rotate(
            keyStore: keyStore, backend: loaded.backend, ring: ring, stores: stores, logger: fixture.logger)
        #expect(new.id != loaded.current.id)
        #expect(ring.keyIDs == [new.id])
        let reloaded = try fixture.keyStore().load(preference: .keyFile)
        #expect(reloaded.current.id == new.id)
        #expect(reloaded.pending == nil)
        try expectAllReadable(fixture, stores, keyID: new.id)
    }

    /// Every step of a rotation, as seen by the fault hook of an uninterrupted one.
    func steps(_ backend: KeyBackendPreference, creds: String) throws -> [RotationStep] {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (keyStore, loaded, ring, stores) = try populate(fixture, backend: backend, creds: creds)
        let seen = Mutex<[RotationStep]>([])
        try KeyRotation.rotate(
            keyStore: keyStore, backend: loaded.backend, ring: ring, stores: stores, logger: fixture.logger,
            faultHook: { step in seen.withLock { $0.append(step) } })
        return seen.withLock { $0 }
    }

    func interrupt(at index: Int, of total: Int, _ backend: KeyBackendPreference, creds: String) throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (keyStore, loaded, ring, stores) = try populate(fixture, backend: backend, creds: creds)
        let count = Mutex(0)
        let interrupted = #expect(throws: StateError.self) {
            try KeyRotation.rotate(
                keyStore: keyStore, backend: loaded.backend, ring: ring, stores: stores, logger: fixture.logger,
                faultHook: { step throws(StateError) in
                    let n = count.withLock { n in
                        defer { n += 1 }
                        return n
                    }
                    if n == index { throw crash("\(step)") }
                })
        }
        #expect(interrupted?.reason == "simulated-crash")

        // The next start: load the keys, recover, then every file opens and is under one key.
        let restartedStore = fixture.keyStore(systemdCreds: creds)
        let reloaded = try restartedStore.load(preference: backend)
        let restartedRing = KeyRing(key: reloaded.current)
        let restarted = try stores.map {
            try SealedStore(directory: $0.directory, keys: restartedRing, logger: fixture.logger)
        }
        let resumed = try KeyRotation.recover(
            loaded: reloaded, keyStore: restartedStore, ring: restartedRing, stores: restarted,
            logger: fixture.logger)
        #expect(resumed == (index > 0 && index < total - 1))
        let final = try restartedStore.load(preference: backend)
        #expect(final.pending == nil)
        #expect(restartedRing.keyIDs == [final.current.id])
        try expectAllReadable(fixture, restarted, keyID: final.current.id)
        if index == 0 { #expect(final.current.id == loaded.current.id) }
        if index > 0 { #expect(final.current.id != loaded.current.id) }
    }

    @Test("a rotation interrupted at any step is completed at the next start (key file)")
    func interruptedKeyFile() throws {
        let steps = try steps(.keyFile, creds: "/nonexistent")
        #expect(steps.count == 7)
        for index in 0..<steps.count { try interrupt(at: index, of: steps.count, .keyFile, creds: "/nonexistent") }
    }

    @Test("a rotation interrupted at any step is completed at the next start (systemd credential)")
    func interruptedCredential() throws {
        try KeyStoreTests().requireSystemdCreds()
        let steps = try steps(.systemdCredential, creds: KeyStoreTests.systemdCreds)
        for index in 0..<steps.count {
            try interrupt(at: index, of: steps.count, .systemdCredential, creds: KeyStoreTests.systemdCreds)
        }
    }
}

@Suite("Key rotation: a damaged pending key")
struct DamagedPendingKeyTests {
    @Test("an unreadable pending key is discarded at load (rolled back) and logged")
    func unreadablePending() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let first = try fixture.keyStore().load(preference: .keyFile)
        let pending = fixture.keyDirectory + "/state.key.pending"
        #expect(
            FileManager.default.createFile(
                atPath: pending, contents: Data([1, 2, 3]), attributes: [.posixPermissions: 0o600]))
        let loaded = try fixture.keyStore().load(preference: .keyFile)
        #expect(loaded.pending == nil)
        #expect(loaded.current.id == first.current.id)
        #expect(!FileManager.default.fileExists(atPath: pending))
        #expect(
            fixture.lines(atLeast: .error).contains { $0.hasPrefix("discarded an unreadable pending rotation key") })
    }
}
