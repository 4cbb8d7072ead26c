import Foundation
import RouseCurl
import RouseGateway
import RouseTestSupport
import Testing

/// What a channel request costs the store thread's device lane when its credential is bogus.
@Suite("Gateway device lane: bogus channel opens queue nothing outside the budget", .timeLimit(.minutes(2)))
struct DeviceLaneBudgetTests {
    @Test("300 channel requests with a bogus credential: 401 each, no channel close queued; a real channel: one")
    func bogusChannelOpens() async throws {
        let h = try await Harness.start()
        guard case .bearer(let credential) = h.device.credential else { throw FixtureError("bearer device expected") }
        let wrong = DeviceClient(
            curl: h.curl, port: h.gateway.devicePort,
            credential: .bearer(String(credential.dropLast(64)) + String(repeating: "0", count: 64)))
        var statuses: [Int: Int] = [:]
        for _ in 0..<300 {
            do {
                _ = try await wrong.channel()
                statuses[200, default: 0] += 1
            } catch let refused as ChannelRefused {
                statuses[refused.status, default: 0] += 1
            }
        }
        #expect(statuses == [401: 300], "\(statuses)")
        // Before: each of them queued a channel close, outside the device lane's budget (maxQueuedDeviceRequests).
        #expect(h.gateway.metrics.total("channel-closes-queued") == 0)
        let channel = try await h.channel()
        await h.push(1)
        #expect(try await h.numbers(channel, count: 1) == [1])
        channel.close()
        // The connection ends with the client: its one open channel queues its close.
        await h.stop()
        #expect(h.gateway.metrics.total("channel-closes-queued") == 1)
    }
}
