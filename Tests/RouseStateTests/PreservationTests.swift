import Logging
import Testing

@testable import RouseState

@Suite("Preservation and restoration")
struct PreservationTests {
    static let handler = "org.example.phone"

    func archive(_ paths: [String], tag: String = "v", writerVersion: String = "1.0") throws -> PreservationArchive {
        var archive = PreservationArchive(
            info: .init(
                handler: Self.handler, writerVersion: writerVersion, agentVersion: "0.1", createdAt: 1_700_000_000))
        for path in paths { archive.preserve(Array("\(tag):\(path)".utf8), at: try RestorationPath(path)) }
        return archive
    }

    func open(_ fixture: StateFixture) throws -> PreservationStore {
        let (store, _) = try fixture.open()
        return PreservationStore(store: store, logger: fixture.logger)
    }

    /// Restores everything into a dictionary.
    func restoreAll(_ store: PreservationStore, _ restoration: Restoration) throws -> [String: String] {
        var restored: [String: String] = [:]
        _ = try store.restore(restoration) { path, data in
            restored[path.description] = String(decoding: data, as: UTF8.self)
        }
        return restored
    }

    @Test("restoration paths: parsing, parents, order")
    func paths() throws {
        let path = try RestorationPath("calls/1234/ui")
        #expect(path.parent?.description == "calls/1234")
        #expect(path.identifier == "ui")
        #expect(path.isWithin(try RestorationPath("calls")))
        #expect(try RestorationPath("calls") < path)
        for bad in ["", "/calls", "calls/", "calls//ui", "calls/../x", "."] {
            #expect(throws: StateError.self) { try RestorationPath(bad) }
        }
    }

    @Test("a piece whose parent is not preserved is not preserved")
    func orphans() throws {
        let archive = try archive(["calls", "calls/1234", "calls/1234/ui", "settings/editor", "settings/editor/font"])
        #expect(archive.preservedPieces.map(\.path.description) == ["calls", "calls/1234", "calls/1234/ui"])
        #expect(archive.orphans.map(\.description) == ["settings/editor", "settings/editor/font"])
        #expect(archive[try RestorationPath("settings/editor")] == nil)
    }

    @Test("preserve → relaunch: pieces given back under the same paths, offered once, then discarded")
    func restoreSamePaths() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        try open(fixture).preserve(
            try archive(["calls", "calls/1234", "calls/1234/ui", "settings", "settings/editor"]))

        let store = try open(fixture)
        let offered = try #require(try store.beginLaunch(handler: Self.handler))
        #expect(offered.info.writerVersion == "1.0")
        #expect(offered.info.createdAt == 1_700_000_000)
        #expect(
            try restoreAll(store, offered) == [
                "calls": "v:calls", "calls/1234": "v:calls/1234", "calls/1234/ui": "v:calls/1234/ui",
                "settings": "v:settings", "settings/editor": "v:settings/editor",
            ])
        #expect(try store.restore(offered) { _, _ in }.notOffered)
        try store.finishLaunch(handler: Self.handler)
        #expect(!fixture.exists("\(Self.handler).state"))

        let next = try open(fixture)
        #expect(try next.beginLaunch(handler: Self.handler) == nil)
    }

    @Test("identifier mapping: an identifier that no longer matches is skipped, not an error")
    func identifierMapping() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        try open(fixture).preserve(try archive(["calls", "calls/1234", "calls/5678", "calls/5678/ui"]))
        let store = try open(fixture)
        let offered = try #require(try store.beginLaunch(handler: Self.handler))
        let liveCalls: [String: Int] = ["calls": 0, "calls/5678": 5678, "calls/5678/ui": 5679]
        var applied: [Int] = []
        let outcome = try store.restore(offered, identify: { liveCalls[$0.description] }) { call, _ in
            applied.append(call)
        }
        #expect(applied == [0, 5678, 5679])
        #expect(outcome.skipped.map(\.description) == ["calls/1234"])
        #expect(outcome.failedAt == nil)
    }

    @Test("an archive of a version the reader does not accept is discarded")
    func versionRefused() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        try open(fixture).preserve(try archive(["a"], writerVersion: "1.0"))
        let store = try open(fixture)
        #expect(try store.beginLaunch(handler: Self.handler, accepts: { $0.writerVersion == "2.0" }) == nil)
        #expect(!fixture.exists("\(Self.handler).state"))
        #expect(
            fixture.lines().contains {
                $0 == "discarded preserved state handler=\(Self.handler) reason=unsupported-version"
            })
    }

    @Test("an archive of another archive format version is discarded, not parsed best-effort")
    func formatVersion() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        var newer = try archive(["a"])
        newer.info.formatVersion = 2
        try open(fixture).preserve(newer)
        #expect(try open(fixture).beginLaunch(handler: Self.handler) == nil)
        #expect(!fixture.exists("\(Self.handler).state"))
        #expect(fixture.lines().contains { $0.hasSuffix("reason=unsupported-version") })
    }

    @Test("two launches in a row that crashed before finishing: the archive is discarded")
    func crashLoop() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        try open(fixture).preserve(try archive(["a"]))
        // Launch 1 and 2 start (the counter is persisted before restoring) and crash: a fresh store each time.
        #expect(try open(fixture).beginLaunch(handler: Self.handler) != nil)
        #expect(try open(fixture).beginLaunch(handler: Self.handler) != nil)
        let third = try open(fixture)
        #expect(try third.beginLaunch(handler: Self.handler) == nil)
        #expect(!fixture.exists("\(Self.handler).state"))
        #expect(
            fixture.lines().contains { $0 == "discarded preserved state handler=\(Self.handler) reason=crash-loop" })
        // A launch that finishes resets the counter: the next archive is offered again.
        try third.finishLaunch(handler: Self.handler)
        try third.preserve(try archive(["b"]))
        #expect(try open(fixture).beginLaunch(handler: Self.handler) != nil)
    }

    @Test("one store outliving its handler's crashed launches (the agent): launchAbandoned counts them")
    func crashLoopInOneStore() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let store = try open(fixture)
        try store.preserve(try archive(["a"]))
        #expect(try store.beginLaunch(handler: Self.handler) != nil)
        // Without launchAbandoned the launch would still be in progress, and the next one not counted.
        #expect(try store.beginLaunch(handler: Self.handler) == nil)
        try store.launchAbandoned(handler: Self.handler)
        #expect(try store.beginLaunch(handler: Self.handler) != nil)
        try store.launchAbandoned(handler: Self.handler)
        #expect(try store.state(handler: Self.handler).record.unfinishedLaunches == 2)
        #expect(try store.beginLaunch(handler: Self.handler) == nil)
        #expect(!fixture.exists("\(Self.handler).state"))
    }

    @Test(
        "a handler's launch that crashed during restoration discards the archive at the next launch (the guide's rule)")
    func oneCrash() throws {
        // Before: one crashed launch offered the same archive again (only two in a row discarded it, which the agent's
        // own archive keeps: crashLoop above). Handlers follow the guide: docs/state.md, "Crash during restoration".
        let limit = RestorationStateMachine.crashLimit
        let fixture = try StateFixture()
        defer { fixture.remove() }
        try open(fixture).preserve(try archive(["a"]))
        #expect(try open(fixture).beginLaunch(handler: Self.handler, crashLimit: limit) != nil)  // then crashes
        let second = try open(fixture)
        #expect(try second.beginLaunch(handler: Self.handler, crashLimit: limit) == nil)
        #expect(!fixture.exists("\(Self.handler).state"))
        #expect(
            fixture.lines().contains {
                $0 == "discarded preserved state handler=\(Self.handler) reason=crashed-during-restoration"
            })
        // A launch that finishes (restorationFinished) and preserved: a crash afterwards keeps the new archive.
        try second.preserve(try archive(["b"]))
        try second.finishLaunch(handler: Self.handler)
        let third = try open(fixture)
        let offered = try #require(try third.beginLaunch(handler: Self.handler, crashLimit: limit))
        #expect(try restoreAll(third, offered) == ["b": "v:b"])
    }

    @Test("a handler the user explicitly quit gets no restoration, and keeps nothing until its next launch")
    func quitByUser() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let store = try open(fixture)
        try store.preserve(try archive(["a"]))
        try store.quitByUser(handler: Self.handler)
        #expect(!fixture.exists("\(Self.handler).state"))
        #expect(try store.preserve(try archive(["late"])) == false)
        #expect(!fixture.exists("\(Self.handler).state"))

        let next = try open(fixture)
        #expect(try next.beginLaunch(handler: Self.handler) == nil)
        try next.finishLaunch(handler: Self.handler)
        #expect(try next.preserve(try archive(["b"])))
    }

    @Test("a restore that fails part-way discards the rest")
    func failedPartWay() throws {
        struct Broken: Error {}
        let fixture = try StateFixture()
        defer { fixture.remove() }
        try open(fixture).preserve(try archive(["a", "b", "c"]))
        let store = try open(fixture)
        let offered = try #require(try store.beginLaunch(handler: Self.handler))
        var applied: [String] = []
        let outcome = try store.restore(offered) { path, _ in
            if path.description == "b" { throw Broken() }
            applied.append(path.description)
        }
        #expect(applied == ["a"])
        #expect(outcome.failedAt?.description == "b")
        #expect(!fixture.exists("\(Self.handler).state"))
        #expect(
            fixture.lines().contains { $0 == "discarded preserved state handler=\(Self.handler) reason=restore-failed" }
        )
    }

    @Test("a handler that no longer opts in: archive and launch record deleted")
    func optOut() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let store = try open(fixture)
        try store.preserve(try archive(["a"]))
        _ = try store.beginLaunch(handler: Self.handler)
        try store.forget(handler: Self.handler)
        #expect(!fixture.exists("\(Self.handler).state"))
        #expect(!fixture.exists("\(Self.handler).launch"))
        #expect(fixture.lines().contains { $0.hasSuffix("reason=opted-out") })
    }

    @Test("the handler may refuse the offered state")
    func refused() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        try open(fixture).preserve(try archive(["a"]))
        let store = try open(fixture)
        #expect(try store.beginLaunch(handler: Self.handler) != nil)
        try store.refuse(handler: Self.handler)
        #expect(!fixture.exists("\(Self.handler).state"))
    }

    @Test("state preserved during a launch survives the launch's finish")
    func preservedDuringLaunch() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let store = try open(fixture)
        try store.preserve(try archive(["a"]))
        _ = try store.beginLaunch(handler: Self.handler)
        try store.preserve(try archive(["b"], tag: "new"))
        try store.finishLaunch(handler: Self.handler)
        let next = try open(fixture)
        let offered = try #require(try next.beginLaunch(handler: Self.handler))
        #expect(try restoreAll(next, offered) == ["b": "new:b"])
    }

    @Test(
        "tampered, truncated and foreign archives: detected, discarded, a clear log line, nothing offered",
        arguments: ["tampered", "truncated", "foreign"])
    func damaged(how: String) throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let store = try open(fixture)
        try store.preserve(try archive(["a", "a/b"]))
        let name = "\(Self.handler).state"
        var bytes = try fixture.bytes(name)
        switch how {
        case "tampered": bytes[bytes.count - 30] ^= 0x80
        case "truncated": bytes.removeLast(10)
        default:
            var other = try archive(["x"])
            other.info.handler = "org.example.other"
            try store.preserve(other)
            bytes = try fixture.bytes("org.example.other.state")
        }
        try fixture.overwrite(name, bytes)
        let next = try open(fixture)
        #expect(try next.beginLaunch(handler: Self.handler) == nil)
        #expect(!fixture.exists(name))
        let reason = ["tampered": "tampered", "truncated": "truncated", "foreign": "foreign"][how] ?? ""
        let lines = fixture.lines(atLeast: .error)
        #expect(
            lines.contains {
                $0.hasPrefix("discarded a sealed file that failed its checks") && $0.contains("reason=\(reason)")
            })
        #expect(lines.contains { $0.hasPrefix("discarded preserved state") && $0.contains("reason=\(reason)") })
    }
}
