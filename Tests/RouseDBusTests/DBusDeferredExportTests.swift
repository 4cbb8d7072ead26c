import Foundation
import RouseDBus
import RouseTestSupport
import Synchronization
import Testing

/// Deferred replies (a service answering after a round trip of its own, as the UnifiedPush distributor's `Register`)
/// and calls sent without a reply wanted (version-1 connectors' NoReply methods), on a private dbus-daemon.
@Suite(.stopsWhatItStarts, .serialized)
struct DBusDeferredExportTests {
    @Test func aCallAnsweredLaterReachesItsCallerAndOneNeverAnsweredFailsAtOnce() async throws {
        let lab = try await DBusLab.start()
        let service = try await lab.connect()
        let client = try await lab.connect()
        #expect(try await service.requestName("org.rouse.Deferred"))
        let kept = Mutex<[DBusDeferredReply]>([])
        let noReply = AsyncStream<[DBusValue]>.makeStream()
        let held = AsyncStream<Void>.makeStream()
        _ = try await service.export(path: "/org/rouse/Deferred") { call, later in
            switch call.member {
            case "Now": return .values([.string("now")])
            case "Later":
                kept.withLock { $0.append(later) }
                held.continuation.yield()
                return nil
            case "Dropped": return nil  // released unanswered
            case "Quiet":
                noReply.continuation.yield(call.arguments)
                return .values([.string("nobody asked")])
            default: return .notHandled
            }
        }
        let path = "/org/rouse/Deferred"
        #expect(
            try await client.call(destination: "org.rouse.Deferred", path: path, interface: "x.y", member: "Now")
                == [.string("now")])
        let waiting = Task {
            try await client.call(destination: "org.rouse.Deferred", path: path, interface: "x.y", member: "Later")
        }
        var heldCalls = held.stream.makeAsyncIterator()
        _ = await heldCalls.next()
        kept.withLock { $0.first }?.send(.values([.uint32(42)]))
        #expect(try await waiting.value == [.uint32(42)])
        // A second answer to the same call does nothing (the caller got one).
        kept.withLock { $0.first }?.send(.values([.uint32(43)]))

        let start = ContinuousClock.now
        do {
            _ = try await client.call(
                destination: "org.rouse.Deferred", path: path, interface: "x.y", member: "Dropped",
                timeout: .seconds(20))
            Issue.record("a dropped call was answered with values")
        } catch {
            #expect(error.name == "org.freedesktop.DBus.Error.Failed")
        }
        #expect(ContinuousClock.now - start < .seconds(10), "a call released unanswered waited for its timeout")

        // A call sent without a reply wanted arrives; the service's answer is not sent.
        try await client.send(
            destination: "org.rouse.Deferred", path: path, interface: "x.y", member: "Quiet", arguments: [.string("q")])
        var iterator = noReply.stream.makeAsyncIterator()
        #expect(await iterator.next() == [.string("q")])
    }
}
