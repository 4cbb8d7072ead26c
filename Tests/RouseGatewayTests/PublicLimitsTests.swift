import Foundation
import RouseHTTP2
import RouseTestSupport
import Testing

/// The gateway's listeners face the internet: connection caps, budgets and their metrics.
@Suite("Gateway in public: connection caps and budget metrics", .timeLimit(.minutes(2)))
struct PublicLimitsTests {
    @Test("a connection flood on the device port stops at the per-address cap; providers still push; metrics show it")
    func deviceConnectionFlood() async throws {
        let h = try await Harness.start { $0.limits.maxConnectionsPerAddress = 20 }
        // The harness's device client may hold a connection of its own: fill what is left of the cap.
        var held: [RawH2Client] = []
        var refused = 0
        for _ in 0..<30 {
            let client = try RawH2Client(port: h.gateway.devicePort, receiveTimeout: .milliseconds(300))
            held.append(client)
        }
        // Refused connections are closed at accept (end of file at once); admitted ones wait for a TLS handshake
        // (our read times out).
        for client in held {
            do {
                if try client.readFrame() == nil { refused += 1 }
            } catch {}
        }
        #expect(refused >= 10, "\(refused) of 30 refused")
        await h.push(1)
        let counts = h.gateway.limitCounts.device
        #expect(counts.connectionsRefusedPerAddress == UInt64(refused))
        let port = try #require(h.gateway.adminPort)
        let admin = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil), on: providerLoop)
        let response = await admin.send(
            HTTP2ClientRequest(method: "GET", path: "/metrics", authority: "localhost", scheme: "http"))
        guard case .response(200, _, let body) = response else {
            Issue.record("metrics: \(response)")
            return
        }
        let metrics = String(decoding: body, as: UTF8.self)
        #expect(
            metrics.contains(
                #"rouse_gateway_limit_hits_total{listener="device",limit="connections-refused-per-address"} \#(refused)"#
            ),
            "\(metrics)")
        admin.close()
        held.removeAll()
        await h.stop()
    }
}
