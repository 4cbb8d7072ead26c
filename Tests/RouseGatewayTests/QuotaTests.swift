import Foundation
import RouseGateway
import RouseTestSupport
import RouseWire
import Testing

/// Each test ends by reading what the device gets: the oldest pushes beyond a quota provably went.
@Suite("Gateway storage quotas per token and per device", .timeLimit(.minutes(5)), .stopsWhatItStarts)
struct QuotaTests {
    /// A payload of about `size` bytes carrying `{"n":…}`.
    static func payload(_ n: Int, size: Int) -> String {
        #"{"n":\#(n),"pad":""# + String(repeating: "x", count: max(size - 20, 0)) + #""}"#
    }

    @Test(
        "an offline token keeps its newest pushes within the push quota; the oldest go, counted",
        arguments: StoreBackend.allCases)
    func tokenPushQuota(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend) { $0.limits.maxPendingPushesPerToken = 3 }
        for n in 1...5 { await h.push(n) }
        #expect(h.gateway.metrics.total("dropped/token-quota") == 2)
        #expect(h.gateway.metrics.total("dropped/alert/token-quota") == 2)
        let channel = try await h.channel()
        #expect(try await h.numbers(channel, count: 3) == [3, 4, 5])
        await h.push(6)
        #expect(try await h.numbers(channel, count: 1) == [6])
        await h.stop()
    }

    @Test("an offline token keeps its newest pushes within the byte quota", arguments: StoreBackend.allCases)
    func tokenByteQuota(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend) { $0.limits.maxPendingBytesPerToken = 5120 }
        for n in 1...4 {
            let answer = await h.provider.push(token: h.token, payload: Self.payload(n, size: 2000))
            #expect(answer.status == 200)
        }
        #expect(h.gateway.metrics.total("dropped/token-quota") == 2)
        let channel = try await h.channel()
        #expect(try await h.numbers(channel, count: 2) == [3, 4])
        await h.push(5)
        #expect(try await h.numbers(channel, count: 1) == [5])
        await h.stop()
    }

    @Test(
        "a device's tokens share the device quota: its oldest push goes, VoIP or not", arguments: StoreBackend.allCases)
    func devicePushQuota(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend) { $0.limits.maxPendingPushesPerDevice = 3 }
        let voip = try await h.device.token(topic: GatewayFixture.voipTopic)
        await h.push(1, token: voip, topic: GatewayFixture.voipTopic, type: "voip")
        await h.push(2)
        await h.push(3, token: voip, topic: GatewayFixture.voipTopic, type: "voip")
        await h.push(4)
        #expect(h.gateway.metrics.total("dropped/voip/device-quota") == 1)
        #expect(h.gateway.metrics.total("dropped/token-quota") == 0)
        let channel = try await h.channel()
        // VoIP first, then arrival order; push 1 (the oldest) is gone.
        #expect(try await h.numbers(channel, count: 3) == [3, 2, 4])
        await h.push(5)
        #expect(try await h.numbers(channel, count: 1) == [5])
        await h.stop()
    }

    @Test(
        "online without acknowledgements: a quota drop frees the window and the next pending push follows",
        arguments: StoreBackend.allCases)
    func quotaOnAConnectedDevice(backend: StoreBackend) async throws {
        let h = try await Harness.start(backend: backend) {
            $0.limits.window = 2
            $0.limits.maxPendingPushesPerToken = 3
        }
        let channel = try await h.channel()
        for n in 1...3 { await h.push(n) }
        #expect(try await h.numbers(channel, count: 2) == [1, 2])
        // Push 4 drops push 1 (in flight, never acknowledged): its window slot goes to push 3.
        await h.push(4)
        #expect(try await h.numbers(channel, count: 1) == [3])
        let acked = try await h.device.ack(["1", "2"])
        #expect(acked == DeviceAckReply(acked: 1, unknown: 1))
        #expect(try await h.numbers(channel, count: 1) == [4])
        await h.stop()
    }

    @Test(
        "the store's totals follow every delete: acknowledgement, expiry, token and device revocation",
        arguments: StoreBackend.allCases)
    func totalsFollowDeletes(backend: StoreBackend) async throws {
        let opened = try await backend.open()
        let store = opened.store
        func push(_ token: String, _ device: String, type: String?, expiresAt: Int64 = 10_000) -> StoredPush {
            StoreContractTests.push(
                device: device, token: token, type: type, expiresAt: expiresAt,
                payload: [UInt8](repeating: 1, count: 100))
        }
        try store.write { t in
            for token in ["a", "b"] {
                try t.insertToken(TokenRecord(token: token, deviceID: "d", topic: "t", createdAt: 0, revokedAt: nil))
            }
        }
        let ids = try store.write { t in
            try [
                t.insertPush(push("a", "d", type: "voip")), t.insertPush(push("b", "d", type: "alert")),
                t.insertPush(push("a", "d", type: "alert", expiresAt: 5)), t.insertPush(push("a", "d", type: nil)),
                t.insertPush(push("b", "d", type: "voip")),
            ]
        }
        // Acknowledged and expired pushes leave the totals.
        #expect(try store.write { try $0.acknowledge(deviceID: "d", ids: [ids[1]]) } == 1)
        #expect(try store.write { try $0.deleteExpired(now: 5) } == 1)
        // Token a holds ids 0 and 3; device d holds 0, 3, 4.
        #expect(try store.write { try $0.trimBacklog(.token("a"), pushes: 2, bytes: 200) }.isEmpty)
        #expect(try store.write { try $0.trimBacklog(.device("d"), pushes: 3, bytes: 300) }.isEmpty)
        let byBytes = try store.write { try $0.trimBacklog(.device("d"), pushes: 3, bytes: 250) }
        #expect(byBytes.map(\.id) == [ids[0]])
        #expect(byBytes.first?.pushType == "voip")
        // A revoked token's pushes leave the device's totals too.
        #expect(try store.write { try $0.revokeToken("b", deviceID: "d", at: 1) } == [ids[4]])
        #expect(try store.write { try $0.trimBacklog(.device("d"), pushes: 0, bytes: 0) }.map(\.id) == [ids[3]])
        #expect(try store.read { try $0.pendingCounts() }.isEmpty)
        #expect(try store.write { try $0.trimBacklog(.token("a"), pushes: 0, bytes: 0) }.isEmpty)
        // A revoked device's pushes leave them as well.
        try store.write { t in
            try t.insertDevice(
                DeviceRecord(id: "d", authentication: .secret, credentialHash: nil, createdAt: 0, revokedAt: nil))
            _ = try t.insertPush(push("a", "d", type: "alert"))
        }
        #expect(try store.write { try $0.revokeDevice("d", at: 2) })
        #expect(try store.write { try $0.trimBacklog(.device("d"), pushes: 0, bytes: 0) }.isEmpty)
        #expect(try store.write { try $0.trimBacklog(.token("a"), pushes: 0, bytes: 0) }.isEmpty)
    }

    @Test("DELETE /device/v1/tokens/… reads only what it deletes, not the device's backlog with payloads")
    func dropTokenReadsOnlyItsPushes() async throws {
        let h = try await Harness.start(store: { try RecordingStore(path: $0.path + "/gateway.sqlite") })
        let store = try #require(h.gateway.store as? RecordingStore)
        let voip = try await h.device.token(topic: GatewayFixture.voipTopic)
        for n in 1...20 { await h.push(n) }
        await h.push(21, token: voip, topic: GatewayFixture.voipTopic, type: "voip")
        store.reset()
        let (status, _) = try await h.device.call("DELETE", "/device/v1/tokens/\(voip)")
        #expect(status == 200)
        #expect(!store.calls.contains("pendingList"), "\(store.calls)")
        #expect(!store.calls.contains("pending"), "\(store.calls)")
        #expect(store.calls.contains("revokeToken"))
        let channel = try await h.channel()
        #expect(try await h.numbers(channel, count: 20) == Array(1...20))
        await h.push(22)
        #expect(try await h.numbers(channel, count: 1) == [22])
        await h.stop()
    }
}
