import Foundation
import RouseSystem
import RouseTestSupport
import Testing

@testable import RouseState

@Suite("Atomic, durable writes")
struct AtomicWriteTests {
    @Test(
        "a crash before any write step leaves the old file or the new one, never a broken one",
        arguments: WriteStep.allCases)
    func crashInProcess(at step: WriteStep) throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        try store.write(Array("old".utf8), name: "a.state", kind: "k")
        let (crashing, _) = try fixture.open(faultHook: { current, _ throws(StateError) in
            if current == step { throw crash(current.rawValue) }
        })
        #expect(throws: StateError.self) { try crashing.write(Array("new".utf8), name: "a.state", kind: "k") }
        let (reader, _) = try fixture.open()
        try reader.cleanStaleTemps()
        let content = try reader.read(name: "a.state", kind: "k").map { String(decoding: $0, as: UTF8.self) }
        let renamed = [WriteStep.fsyncDirectory, .done].contains(step)
        #expect(content == (renamed ? "new" : "old"))
        #expect(try Sys.directoryEntries(fixture.storeDirectory) == ["a.state"])
    }

    @Test("stale temp files are removed at start, and logged")
    func staleTemps() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        try store.write(Array("old".utf8), name: "a.state", kind: "k")
        try fixture.overwrite(".a.state.tmp-abcdefgh", Array("half a new fi".utf8))
        try fixture.overwrite(".b.state.tmp-12345678", [])
        #expect(try store.cleanStaleTemps() == [".a.state.tmp-abcdefgh", ".b.state.tmp-12345678"])
        #expect(try Sys.directoryEntries(fixture.storeDirectory) == ["a.state"])
        #expect(fixture.lines().filter { $0.hasPrefix("removed a stale temp file") }.count == 2)
        #expect(try store.read(name: "a.state", kind: "k") == Array("old".utf8))
    }

    @Test("files are created 0600")
    func mode() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let (store, _) = try fixture.open()
        try store.write([1], name: "a.state", kind: "k")
        let mode = try #require(try Sys.status(fixture.storeDirectory + "/a.state")).mode
        #expect(mode & 0o777 == 0o600)
    }
}

@Suite("Power cut: a writer process SIGKILLed at every write step")
struct CrasherTests {
    static let handler = "org.example.phone"

    /// Runs the crasher; returns its exit status, or the signal that killed it (negated).
    func runCrasher(_ fixture: StateFixture, tag: String, crashAt: WriteStep?) throws -> Int32 {
        try runCrasher(fixture, tag: tag, crashAt: crashAt, mode: "preserve").status
    }

    /// Runs the crasher in `mode`; returns its status (or negated signal) and its output.
    func runCrasher(_ fixture: StateFixture, tag: String, crashAt: WriteStep?, mode: String) throws
        -> (status: Int32, output: String)
    {
        var environment = [
            "ROUSE_STATE_DIR": fixture.storeDirectory, "ROUSE_STATE_KEY_DIR": fixture.keyDirectory,
            "ROUSE_STATE_HANDLER": Self.handler, "ROUSE_STATE_TAG": tag, "ROUSE_STATE_PIECES": "50",
        ]
        if let crashAt { environment["ROUSE_STATE_CRASH_AT"] = crashAt.rawValue }
        environment["ROUSE_STATE_MODE"] = mode
        let result = try ChildProcess.runSync(try Products.path("rouse-state-crasher"), [], environment: environment)
        return (result.signal.map { -$0 } ?? result.status, result.stdout)
    }

    @Test(
        "preserve → kill -9 → relaunch: the old or the new archive, restored at the same paths",
        arguments: WriteStep.allCases)
    func killAtStep(_ step: WriteStep) throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        #expect(try runCrasher(fixture, tag: "old", crashAt: nil) == 0)
        #expect(try runCrasher(fixture, tag: "new", crashAt: step) == -SIGKILL)

        let (store, _) = try fixture.open()
        let stale = try store.cleanStaleTemps()
        #expect(stale.count <= 1)
        let preservation = PreservationStore(store: store, logger: fixture.logger)
        let offered = try #require(try preservation.beginLaunch(handler: Self.handler))
        var restored: [String: String] = [:]
        let outcome = try preservation.restore(offered) { path, data in
            restored[path.description] = String(decoding: data, as: UTF8.self)
        }
        let tag = [WriteStep.fsyncDirectory, .done].contains(step) ? "new" : "old"
        #expect(outcome.restored.count == 101)
        #expect(restored["calls"] == "\(tag)-calls")
        for i in 0..<50 {
            #expect(restored["calls/\(i)"] == "\(tag)-call-\(i)")
            #expect(restored["calls/\(i)/ui"] == "\(tag)-ui-\(i)")
        }
        #expect(!fixture.lines().contains { $0.hasPrefix("discarded") })
    }
}

@Suite("Crash loop: handler processes SIGKILLed during launch")
struct CrashLoopProcessTests {
    @Test("two launches killed before finishing: the third launch finds the archive discarded")
    func twoCrashedLaunches() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let crasher = CrasherTests()
        #expect(try crasher.runCrasher(fixture, tag: "old", crashAt: nil) == 0)
        for _ in 0..<2 {
            let launch = try crasher.runCrasher(fixture, tag: "", crashAt: nil, mode: "launch")
            #expect(launch.status == -SIGKILL)
            #expect(launch.output == "offered 101\n")
        }
        let (store, _) = try fixture.open()
        let preservation = PreservationStore(store: store, logger: fixture.logger)
        #expect(try preservation.beginLaunch(handler: CrasherTests.handler) == nil)
        #expect(!fixture.exists("\(CrasherTests.handler).state"))
        #expect(
            fixture.lines().contains {
                $0 == "discarded preserved state handler=\(CrasherTests.handler) reason=crash-loop"
            })
    }
}
