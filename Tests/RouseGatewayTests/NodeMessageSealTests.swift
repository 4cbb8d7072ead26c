import Foundation
import RouseGateway
import Testing

/// Node messages sealed under the cluster key: what another PostgreSQL role could NOTIFY is refused, with the reason.
@Suite("Node messages: sealed, bound to their recipient, fresh, never replayed")
struct NodeMessageSealTests {
    static let key = NodeMessageSeal.makeKey()
    static let now: Int64 = 1_800_000_000_000

    @Test("a sealed message opens for its recipient, once")
    func roundTrip() throws {
        let seal = NodeMessageSeal(key: Self.key)
        seal.setSender("n1")
        var opener = NodeMessageSeal.Opener(key: Self.key, node: "n0")
        let sealed = try seal.seal("p\t7\tdevice-1", to: "n0", now: Self.now)
        #expect(sealed.hasPrefix(NodeMessageSeal.prefix) && !sealed.contains("device-1"), "confidential: \(sealed)")
        let opened = try opener.open(sealed, now: Self.now + 10).get()
        #expect(opened.sender == "n1" && opened.lines == "p\t7\tdevice-1")
        // The same payload again (a role that LISTENs captured and re-NOTIFYs it): refused.
        #expect(throws: NodeMessageSeal.OpenError.self) { try opener.open(sealed, now: Self.now + 20).get() }
        // The next message of the same sender still opens.
        let next = try seal.seal("r\tdevice-1", to: "n0", now: Self.now + 30)
        #expect(try opener.open(next, now: Self.now + 40).get().lines == "r\tdevice-1")
    }

    @Test(
        "forged, foreign, misaddressed, stale and garbage payloads are refused",
        arguments: [
            "p\t9223372036854775807\tdevice-1",  // what any role could NOTIFY before
            "s1:", "s1:!!!", "s1:" + String(repeating: "A", count: 8000), "s1:" + Data(count: 40).base64EncodedString(),
        ])
    func refused(payload: String) {
        var opener = NodeMessageSeal.Opener(key: Self.key, node: "n0")
        #expect(throws: NodeMessageSeal.OpenError.self) { try opener.open(payload, now: Self.now).get() }
    }

    @Test("another key, another recipient, a time outside the window, extreme clocks: refused, nothing traps")
    func boundToKeyRecipientAndTime() throws {
        let seal = NodeMessageSeal(key: Self.key)
        var opener = NodeMessageSeal.Opener(key: Self.key, node: "n0")
        let other = NodeMessageSeal(key: NodeMessageSeal.makeKey())
        #expect(throws: NodeMessageSeal.OpenError.self) {
            try opener.open(try other.seal("r\td", to: "n0", now: Self.now), now: Self.now).get()
        }
        #expect(throws: NodeMessageSeal.OpenError.self) {
            try opener.open(try seal.seal("r\td", to: "n2", now: Self.now), now: Self.now).get()
        }
        let window = NodeMessageSeal.windowMilliseconds
        #expect(throws: NodeMessageSeal.OpenError.self) {
            try opener.open(try seal.seal("r\td", to: "n0", now: Self.now - window - 1), now: Self.now).get()
        }
        #expect(throws: NodeMessageSeal.OpenError.self) {
            try opener.open(try seal.seal("r\td", to: "n0", now: Int64.min), now: Int64.max).get()
        }
        #expect(throws: NodeMessageSeal.OpenError.self) {
            try opener.open(try seal.seal("r\td", to: "n0", now: Int64.max), now: Int64.min).get()
        }
        #expect(
            try opener.open(try seal.seal("r\td", to: "n0", now: Self.now - window), now: Self.now).get().lines
                == "r\td")
    }

    @Test("a message sealed before the opener's start (for an earlier run of the node) is refused, even in the window")
    func refusedFromEarlierRun() throws {
        let seal = NodeMessageSeal(key: Self.key)
        seal.setSender("n1")
        let captured = try seal.seal("c\t3\tdevice-1", to: "n0", now: Self.now - 5)
        // The node restarted at `now`: a fresh opener has seen nothing.
        var opener = NodeMessageSeal.Opener(key: Self.key, node: "n0", notBefore: Self.now)
        #expect(throws: NodeMessageSeal.OpenError.self) { try opener.open(captured, now: Self.now + 10).get() }
        let fresh = try seal.seal("c\t3\tdevice-1", to: "n0", now: Self.now)
        #expect(try opener.open(fresh, now: Self.now + 10).get().lines == "c\t3\tdevice-1")
    }
}
