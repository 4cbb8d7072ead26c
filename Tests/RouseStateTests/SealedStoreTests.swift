import Foundation
import Testing

@testable import RouseState

@Suite("Sealed files")
struct SealedStoreTests {
    @Test("round trip, with the name, kind and format version in the header")
    func roundTrip() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, ring) = try fixture.open()
        try store.write(Array("hunter2-password".utf8), name: "device.credential", kind: "secret")
        #expect(try store.read(name: "device.credential", kind: "secret") == Array("hunter2-password".utf8))
        #expect(try store.read(name: "absent", kind: "secret") == nil)
        let bytes = try fixture.bytes("device.credential")
        let header = try SealedFile.parseHeader(bytes, name: "device.credential", kind: "secret")
        #expect(header.formatVersion == 1)
        #expect(header.keyID == ring.writingKeyID)
        #expect(!bytes.contains(subsequence: Array("hunter2-password".utf8)))
    }

    @Test(
        "a flipped bit anywhere is detected, reported and the file discarded",
        arguments: [0, 7, 9, 12, 21, 30, -20, -1])
    func tampered(offset: Int) throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        try store.write(Array(repeating: 7, count: 100), name: "a.state", kind: "preservation")
        var bytes = try fixture.bytes("a.state")
        let index = offset >= 0 ? offset : bytes.count + offset
        bytes[index] ^= 0x01
        try fixture.overwrite("a.state", bytes)
        let error = #expect(throws: StateError.self) { try store.read(name: "a.state", kind: "preservation") }
        #expect(error?.isIntegrityFailure == true)
        #expect(!fixture.exists("a.state"))
        #expect(fixture.lines().contains { $0.hasPrefix("discarded a sealed file that failed its checks") })
    }

    @Test("a truncated file is reported as truncated and discarded", arguments: [0, 3, 27, 40, 60, 150])
    func truncated(length: Int) throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        try store.write(Array(repeating: 1, count: 100), name: "a.state", kind: "preservation")
        try fixture.overwrite("a.state", Array(try fixture.bytes("a.state").prefix(length)))
        let error = #expect(throws: StateError.self) { try store.read(name: "a.state", kind: "preservation") }
        #expect(error?.reason == "truncated")
        #expect(!fixture.exists("a.state"))
        let line = fixture.lines().first { $0.hasPrefix("discarded a sealed file") }
        #expect(line?.contains("reason=truncated") == true)
    }

    @Test("a file copied over another name, or read as another kind, is foreign")
    func foreign() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        try store.write(Array("a".utf8), name: "a.state", kind: "preservation")
        try fixture.overwrite("b.state", try fixture.bytes("a.state"))
        let renamed = #expect(throws: StateError.self) { try store.read(name: "b.state", kind: "preservation") }
        #expect(renamed?.reason == "foreign")
        #expect(!fixture.exists("b.state"))
        let otherKind = #expect(throws: StateError.self) { try store.read(name: "a.state", kind: "secret") }
        #expect(otherKind?.description.contains("foreign file (header says name a.state, kind preservation)") == true)
        #expect(!fixture.exists("a.state"))
    }

    @Test("a file sealed under another key is reported as wrong-key and discarded")
    func wrongKey() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        try store.write(Array("a".utf8), name: "a.state", kind: "preservation")
        let other = try SealedStore(
            directory: fixture.storeDirectory, keys: KeyRing(key: DataKey.random()), logger: fixture.logger)
        let error = #expect(throws: StateError.self) { try other.read(name: "a.state", kind: "preservation") }
        #expect(error?.reason == "wrong-key")
        #expect(!fixture.exists("a.state"))
    }

    @Test("an unknown format version, trailing bytes, or no magic are discarded with their own reason")
    func malformed() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        try store.write(Array("a".utf8), name: "a.state", kind: "k")
        let good = try fixture.bytes("a.state")
        var newer = good
        newer[7] = 3  // versions 1 and 2 are known (2: complete-unless-open)
        let cases: [([UInt8], String)] = [
            (newer, "unsupported-format-version"), (good + [0], "trailing-bytes"),
            (Array("hello, this is not a sealed file at all".utf8), "not-a-sealed-file"),
        ]
        for (bytes, reason) in cases {
            try fixture.overwrite("a.state", bytes)
            let error = #expect(throws: StateError.self) { try store.read(name: "a.state", kind: "k") }
            #expect(error?.reason == reason)
            #expect(!fixture.exists("a.state"))
        }
    }

    @Test("names are one safe path component")
    func names() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        for bad in ["", "../x", "a/b", ".hidden", "sp ace"] {
            #expect(throws: StateError.self) { try store.write([1], name: bad, kind: "k") }
        }
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains { Array(self[$0..<($0 + subsequence.count)]) == subsequence }
    }
}
