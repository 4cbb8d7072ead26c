import RouseGateway
import Testing

@Suite("DeviceDelivery state machine (no sockets)")
struct DeviceDeliveryTests {
    @Test("a new channel loads its backlog, then sends new pushes at once while the window has room")
    func windowAndBacklog() {
        var d = DeviceDelivery(channelID: 1, window: 2, voipAllowance: 1)
        #expect(d.start == .refill(limit: 2))
        d.refilled(ids: [1], limit: 2)
        #expect(!d.backlog)
        #expect(d.offer(id: 2, isVoIP: false) == .send)
        #expect(d.offer(id: 3, isVoIP: false) == .none)
        #expect(d.backlog)
        // Order: once something waits in the store, later pushes wait too.
        #expect(d.acknowledged([1]) == .refill(limit: 1))
        d.refilled(ids: [3], limit: 1)
        #expect(d.inFlight == [2, 3])
    }

    @Test("a sequence number of Int64.max from another node's message does not trap the next offer")
    func extremeSequenceNumbers() {
        var d = DeviceDelivery(channelID: 1, window: 2, voipAllowance: 1, lastSeq: 5)
        d.refilled(ids: [], limit: 2)
        // A forged or corrupt `p` message: before, the next push to the device trapped on `lastSeq + 1`.
        #expect(d.storedElsewhere(seq: Int64.max) == .refill(limit: 2))
        d.refilled(ids: [], limit: 2)
        #expect(d.offer(id: 7, isVoIP: false, seq: 6) == .refill(limit: 2))
        #expect(d.offer(id: 8, isVoIP: false, seq: Int64.max) == .refill(limit: 2))
        #expect(d.lastSeq == Int64.max)
    }

    @Test("VoIP pushes jump the queue within their allowance")
    func voip() {
        var d = DeviceDelivery(channelID: 1, window: 1, voipAllowance: 1)
        d.refilled(ids: [1], limit: 1)
        #expect(d.offer(id: 2, isVoIP: false) == .none)
        #expect(d.offer(id: 3, isVoIP: true) == .send)
        #expect(d.offer(id: 4, isVoIP: true) == .none)
        #expect(d.canSendEphemeral(isVoIP: true) == false)
        #expect(d.acknowledged([1, 3]) == .refill(limit: 1))
    }

    @Test("acknowledgements of unknown ids change nothing; an empty store ends the backlog")
    func unknownAcks() {
        var d = DeviceDelivery(channelID: 1, window: 4, voipAllowance: 0)
        d.refilled(ids: [], limit: 4)
        #expect(d.acknowledged([42, 43]) == .none)
        #expect(d.inFlight.isEmpty)
        #expect(d.offer(id: 5, isVoIP: false) == .send)
        #expect(d.removed([5]) == .none)
    }
}

@Suite("DeviceDelivery across nodes: sequence numbers (no sockets)")
struct DeviceDeliverySequenceTests {
    @Test("a push that follows the last sequence number goes out at once; after a gap the store goes first")
    func gapLoadsTheStore() {
        var d = DeviceDelivery(channelID: 1, window: 8, voipAllowance: 0, lastSeq: 4)
        d.refilled(ids: [], limit: 8)
        #expect(d.offer(id: 100, isVoIP: false, seq: 5) == .send)
        // Sequence number 6 was taken by another node (its message may still be on its way): 7 must not overtake it.
        #expect(d.offer(id: 102, isVoIP: false, seq: 7) == .refill(limit: 7))
        #expect(d.backlog)
        #expect(d.lastSeq == 7)
        d.refilled(ids: [101, 102], limit: 7)
        #expect(!d.backlog)
        #expect(d.offer(id: 103, isVoIP: false, seq: 8) == .send)
    }

    @Test("a channel that does not know the last number loads the store before sending from memory")
    func unknownLastSequence() {
        var d = DeviceDelivery(channelID: 1, window: 4, voipAllowance: 0)
        d.refilled(ids: [], limit: 4)
        #expect(d.offer(id: 9, isVoIP: false, seq: 3) == .refill(limit: 4))
        d.refilled(ids: [8, 9], limit: 4)
        #expect(d.offer(id: 10, isVoIP: false, seq: 4) == .send)
    }

    @Test("news from another node loads the store when the window has room, and moves the last number on")
    func storedElsewhere() {
        var d = DeviceDelivery(channelID: 1, window: 2, voipAllowance: 0, lastSeq: 1)
        d.refilled(ids: [], limit: 2)
        #expect(d.storedElsewhere(seq: 2) == .refill(limit: 2))
        d.refilled(ids: [20, 21], limit: 2)
        #expect(d.storedElsewhere(seq: 3) == .none)
        #expect(d.backlog)
        // 4 follows 3: it waits behind the backlog, in order, until acknowledgements make room.
        #expect(d.offer(id: 22, isVoIP: false, seq: 4) == .none)
        #expect(d.acknowledged([20]) == .refill(limit: 1))
        // Lost news (`nil`): the store is looked at, the last number stays.
        d.refilled(ids: [22], limit: 1)
        #expect(d.storedElsewhere(seq: nil) == .none)
        #expect(d.lastSeq == 4)
    }
}

@Suite("Messages between nodes: one typed model, hostile lines refused")
struct NodeMessageTests {
    @Test("messages survive the round trip, device ids with tabs, newlines and % included")
    func roundTrip() {
        let messages: [NodeMessage] = [
            .pending(deviceID: "d01", seq: 42), .replaced(deviceID: "cn with\ttab\nand %0A", channelID: 7),
            .revoked(deviceID: "x"),
        ]
        let payloads = NodeMessage.payloads(messages)
        #expect(payloads.count == 1)
        let parsed = NodeMessage.parse(payloads[0])
        #expect(parsed.messages == messages)
        #expect(parsed.errors.isEmpty)
    }

    @Test(
        "bad lines are errors with their reason; the good lines around them still count",
        arguments: [
            ("p\t-1\td1", "bad sequence number"), ("p\tx\td1", "bad sequence number"), ("c\t1", "2 fields, expected 3"),
            ("z\t1\td", "unknown kind"), ("r\t%zz", "bad device id"), ("r\t", "bad device id"),
        ])
    func badLines(line: String, reason: String) {
        let parsed = NodeMessage.parse("r\tok\n" + line + "\nr\tok2")
        #expect(parsed.messages == [.revoked(deviceID: "ok"), .revoked(deviceID: "ok2")])
        #expect(parsed.errors.map(\.reason) == [reason])
    }

    @Test("many messages are split into payloads under PostgreSQL's 8000-byte limit")
    func payloadLimit() {
        let messages = (0..<2000).map { NodeMessage.pending(deviceID: "d\($0)", seq: Int64($0) + 1) }
        let payloads = NodeMessage.payloads(messages)
        #expect(payloads.count > 1)
        #expect(payloads.allSatisfy { $0.utf8.count <= 7000 })
        #expect(payloads.flatMap { NodeMessage.parse($0).messages } == messages)
    }
}

@Suite("News from other nodes, merged until taken (no sockets)")
struct NodeInboxTests {
    @Test("a flood of messages for a few devices is one entry each, with the highest sequence number; closes once")
    func merged() {
        var inbox = NodeInbox()
        for seq in 1...10_000 {
            inbox.merge([.pending(deviceID: "d\(seq % 3)", seq: Int64(seq)), .revoked(deviceID: "r")])
        }
        inbox.merge([.pending(deviceID: "d0", seq: 5), .replaced(deviceID: "x", channelID: 4)])
        #expect(inbox.pending == ["d0": 9999, "d1": 10_000, "d2": 9998])
        #expect(inbox.closes.count == 2)
        #expect(
            inbox.messages == [
                .replaced(deviceID: "x", channelID: 4), .revoked(deviceID: "r"), .pending(deviceID: "d0", seq: 9999),
                .pending(deviceID: "d1", seq: 10_000), .pending(deviceID: "d2", seq: 9998),
            ])
    }
}
