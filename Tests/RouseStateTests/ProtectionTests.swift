import Foundation
import Testing

@testable import RouseState

@Suite("Protection classes")
struct ProtectionTests {
    @Test("the state machine: none always, until-first-unlock from the first unlock on, complete while unlocked")
    func machine() {
        var machine = ProtectionStateMachine()
        #expect(machine.isAvailable(.none))
        #expect(!machine.isAvailable(.untilFirstUnlock))
        #expect(!machine.isAvailable(.complete))
        #expect(
            machine.report(.unlocked) == [
                .loadKey(.untilFirstUnlock), .loadKey(.complete), .loadKey(.completeUnlessOpen),
            ])
        #expect(machine.report(.locked) == [.dropKey(.complete), .dropKey(.completeUnlessOpen)])
        #expect(machine.isAvailable(.untilFirstUnlock))
        #expect(machine.report(.locked) == [])
        #expect(machine.report(.unlocked) == [.loadKey(.complete), .loadKey(.completeUnlessOpen)])
        #expect(machine.report(.unlocked) == [])
    }

    @Test("until-first-unlock: locked after start (file kept), readable after the first unlock, and on after a lock")
    func untilFirstUnlock() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, ring) = try fixture.open()
        let early = #expect(throws: StateError.self) {
            try store.write([1], name: "a.state", kind: "k", protection: .untilFirstUnlock)
        }
        #expect(early?.reason == "locked")
        ring.report(.unlocked)
        try store.write([1], name: "a.state", kind: "k", protection: .untilFirstUnlock)
        ring.report(.locked)
        #expect(try store.read(name: "a.state", kind: "k") == [1])

        // A restart (a reboot, for the keys): locked until the first unlock, and the file is not discarded.
        let (restarted, restartedRing) = try fixture.open()
        let locked = #expect(throws: StateError.self) { try restarted.read(name: "a.state", kind: "k") }
        #expect(locked?.isLocked == true)
        #expect(fixture.exists("a.state"))
        restartedRing.report(.unlocked)
        #expect(try restarted.read(name: "a.state", kind: "k") == [1])
    }

    @Test("complete: the key is dropped when the session locks and derived again when it unlocks")
    func complete() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, ring) = try fixture.open()
        ring.report(.unlocked)
        try store.write([2], name: "c.state", kind: "k", protection: .complete)
        try store.write([0], name: "n.state", kind: "k", protection: .none)
        ring.report(.locked)
        let locked = #expect(throws: StateError.self) { try store.read(name: "c.state", kind: "k") }
        #expect(locked?.description.contains("protection class complete is locked") == true)
        #expect(throws: StateError.self) { try store.write([3], name: "c.state", kind: "k", protection: .complete) }
        #expect(try store.read(name: "n.state", kind: "k") == [0])
        #expect(fixture.exists("c.state"))
        ring.report(.unlocked)
        #expect(try store.read(name: "c.state", kind: "k") == [2])
    }

    @Test("a file's class is authenticated: classes are sealed under different keys")
    func classBound() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, ring) = try fixture.open()
        ring.report(.unlocked)
        try store.write([2], name: "c.state", kind: "k", protection: .complete)
        var bytes = try fixture.bytes("c.state")
        bytes[8] = ProtectionClass.none.code
        try fixture.overwrite("c.state", bytes)
        let error = #expect(throws: StateError.self) { try store.read(name: "c.state", kind: "k") }
        #expect(error?.reason == "tampered")
    }
}

@Suite("Protection classes: preserved state")
struct ProtectedPreservationTests {
    @Test("an archive of a locked class is not offered and not discarded; offered once unlocked")
    func lockedArchive() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, ring) = try fixture.open()
        ring.report(.unlocked)
        let preservation = PreservationStore(store: store, logger: fixture.logger, protection: .complete)
        var archive = PreservationArchive(info: .init(handler: "h", writerVersion: "1", createdAt: 0))
        archive.preserve([1], at: try RestorationPath("ui"))
        try preservation.preserve(archive)

        let (locked, lockedRing) = try fixture.open()
        let first = PreservationStore(store: locked, logger: fixture.logger, protection: .complete)
        #expect(try first.beginLaunch(handler: "h") == nil)
        #expect(fixture.exists("h.state"))
        #expect(
            fixture.lines().contains { $0 == "preserved state not offered: its protection class is locked handler=h" })
        lockedRing.report(.unlocked)
        let second = PreservationStore(store: locked, logger: fixture.logger, protection: .complete)
        #expect(try second.beginLaunch(handler: "h")?.pieces.first?.data == [1])
    }
}
