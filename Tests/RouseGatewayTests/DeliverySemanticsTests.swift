import Foundation
import RouseClock
import RouseCurl
import RouseGateway
import RouseTestSupport
import RouseWire
import Testing

/// Each test ends with a sentinel push that must be the next record: what should not arrive provably did not.
@Suite("Gateway delivery semantics", .timeLimit(.minutes(5)), .stopsWhatItStarts)
struct DeliverySemanticsTests {
    @Test("a stored push is dropped at its expiration; the storage time is capped", arguments: StoreBackend.allCases)
    func expiration(backend: StoreBackend) async throws {
        let clock = ManualClock.fromNow()
        let h = try await Harness.start(backend: backend, clock: clock) { $0.limits.maxExpirationSeconds = 3600 }
        let now = clock.wallMilliseconds / 1000
        await h.push(1, expiration: now + 60)
        await h.push(2, expiration: now + 10 * 86_400)  // capped at one hour
        clock.advance(by: .seconds(120))
        await h.push(3)
        let channel = try await h.channel()
        let second = try await channel.nextPush()
        #expect(Harness.number(second) == 2)
        #expect(second.expiration <= now + 3600)
        #expect(try await h.numbers(channel, count: 1) == [3])
        await h.stop()
    }

    @Test(
        "a push already past its apns-expiration: offline, 200 and not kept; on an open channel, sent at once",
        arguments: StoreBackend.allCases)
    func pastExpiration(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend)
        await h.push(1, expiration: 1)  // 1970, the device offline: nothing to try, nothing kept
        let channel = try await h.channel()
        // The current second, as aioapns sends for time_to_live=0 (before: answered 200 and dropped untried).
        await h.push(2, expiration: Gateway.systemMilliseconds() / 1000)
        await h.push(3, expiration: 1)
        await h.push(4)
        #expect(try await h.numbers(channel, count: 3) == [2, 3, 4])
        #expect(h.gateway.metrics.total("pushes_in/dropped-offline") == 1)
        #expect(h.gateway.metrics.total("dropped/expired-offline") == 1)
        #expect(h.gateway.metrics.total("pushes_in/delivered-now") == 2)
        await h.stop()
    }

    @Test("the same apns-collapse-id replaces the pending push", arguments: StoreBackend.allCases)
    func collapse(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend)
        await h.push(1, collapseID: "score")
        await h.push(2, collapseID: "other")
        await h.push(3, collapseID: "score")
        await h.push(4)
        let channel = try await h.channel()
        #expect(try await h.numbers(channel, count: 3) == [2, 3, 4])
        #expect(h.gateway.metrics.total("dropped/collapsed") == 1)
        await h.stop()
    }

    @Test(
        "offline: only the newest background push per topic is kept; online: all are delivered",
        arguments: StoreBackend.allCases)
    func backgroundSingleSlot(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend)
        await h.push(1, type: "background")
        await h.push(2, type: "background")
        await h.push(3)
        await h.push(4, type: "background")
        let channel = try await h.channel()
        #expect(try await h.numbers(channel, count: 2) == [3, 4])
        // Online now: nothing is replaced.
        await h.push(5, type: "background")
        await h.push(6, type: "background")
        #expect(try await h.numbers(channel, count: 2) == [5, 6])
        #expect(h.gateway.metrics.total("dropped/background-slot") == 2)
        await h.stop()
    }

    @Test(
        "VoIP with apns-expiration 0: delivered when connected, dropped (counted) when not",
        arguments: StoreBackend.allCases)
    func voipExpirationZero(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend)
        let voip = try await h.device.token(topic: GatewayFixture.voipTopic)
        await h.push(1, token: voip, topic: GatewayFixture.voipTopic, type: "voip", expiration: 0)
        #expect(h.gateway.metrics.total("dropped/expiration-zero-offline") == 1)
        let channel = try await h.channel()
        await h.push(2, token: voip, topic: GatewayFixture.voipTopic, type: "voip", expiration: 0)
        let push = try await channel.nextPush()
        #expect(Harness.number(push) == 2)
        #expect(push.expiration == 0)
        let ack = try await h.device.ack([push.id])
        #expect(ack.acked == 1)
        // Never stored: a reconnect does not bring it back; the sentinel is next.
        channel.close()
        let again = try await h.channel()
        await h.push(3, token: voip, topic: GatewayFixture.voipTopic, type: "voip")
        #expect(try await h.numbers(again, count: 1) == [3])
        await h.stop()
    }

    @Test("order: arrival order, VoIP first, offline and online", arguments: StoreBackend.allCases)
    func ordering(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend) { $0.limits.window = 2 }
        let voip = try await h.device.token(topic: GatewayFixture.voipTopic)
        await h.push(1)
        await h.push(2)
        await h.push(3, token: voip, topic: GatewayFixture.voipTopic, type: "voip")
        await h.push(4)
        let channel = try await h.channel()
        // Window 2: the VoIP push and the first alert, then the rest as acknowledgements free the window.
        let first = try await channel.nextPush()
        let second = try await channel.nextPush()
        #expect([Harness.number(first), Harness.number(second)] == [3, 1])
        // Online with a full window: a new VoIP push still jumps the queue.
        await h.push(5)
        await h.push(6, token: voip, topic: GatewayFixture.voipTopic, type: "voip")
        #expect(try await h.numbers(channel, count: 1) == [6])
        try await h.device.ack([first.id, second.id])
        var rest: [Int] = []
        while rest.count < 3 {
            let push = try await channel.nextPush()
            rest.append(Harness.number(push) ?? -1)
            try await h.device.ack([push.id])
        }
        #expect(rest == [2, 4, 5])
        await h.stop()
    }

    @Test("a dropped token answers 410 Unregistered with the drop time as timestamp", arguments: StoreBackend.allCases)
    func tokenRevocation(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend)
        await h.push(1)
        let (status, json) = try await h.device.call("DELETE", "/device/v1/tokens/\(h.token)")
        #expect(status == 200)
        let revokedAt = (json["revokedAt"] as? NSNumber)?.int64Value
        let answer = await h.provider.push(token: h.token)
        #expect(answer.status == 410)
        #expect(answer.reason == "Unregistered")
        #expect(answer.timestamp == revokedAt)
        #expect(try await h.device.call("DELETE", "/device/v1/tokens/\(h.token)").status == 404)
        // Its pending push went with it.
        let other = try await h.device.token(topic: GatewayFixture.voipTopic)
        await h.push(2, token: other, topic: GatewayFixture.voipTopic, type: "voip")
        let channel = try await h.channel()
        #expect(try await h.numbers(channel, count: 1) == [2])
        await h.stop()
    }

    @Test("a newer channel replaces the older one", arguments: StoreBackend.allCases)
    func staleChannelReplaced(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend)
        let old = try await h.channel()
        let new = try await h.channel()
        #expect(try await old.next() == .record(.replaced))
        #expect(try await old.next() == .end(error: nil))
        await h.push(1)
        #expect(try await h.numbers(new, count: 1) == [1])
        await h.stop()
    }

    @Test("a channel closed by the device is no longer counted as connected", arguments: StoreBackend.allCases)
    func channelClosed(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend)
        let channel = try await h.channel()
        channel.close()
        // Expiration 0 is the probe: dropped once the gateway saw the close.
        let deadline = ContinuousClock.now + .seconds(30)
        while h.gateway.metrics.total("dropped/expiration-zero-offline") == 0 {
            await h.push(0, expiration: 0)
            #expect(ContinuousClock.now < deadline, "the gateway never noticed the closed channel")
            if ContinuousClock.now >= deadline { break }
            await Task.yield()
        }
        await h.stop()
    }
}

@Suite("Gateway channel lifecycle", .timeLimit(.minutes(1)))
struct ChannelLifecycleTests {
    @Test("idle channels get heartbeat records")
    func heartbeat() async throws {
        let h = try await Harness.start { $0.limits.heartbeatSeconds = 1 }
        let channel = try await h.channel()
        let record = try await channel.next(timeout: .seconds(5))
        #expect(record.type == "heartbeat")
        await h.stop()
    }

    @Test("graceful shutdown ends every channel with a shutdown record; stored pushes stay stored")
    func shutdown() async throws {
        let h = try await Harness.start()
        let channel = try await h.channel()
        await h.push(1)
        #expect(try await h.numbers(channel, count: 1) == [1])
        h.provider.close()
        await h.gateway.shutdown(gracePeriod: .seconds(2))
        #expect(try await channel.next() == .record(.shutdown))
        #expect(try await channel.next() == .end(error: nil))
        let pending = try h.gateway.store.read { try $0.pendingList(deviceID: nil, limit: 10) }
        #expect(pending.count == 1)
        await h.curl.shutdown()
    }
}
