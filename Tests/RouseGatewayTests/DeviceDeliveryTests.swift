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
