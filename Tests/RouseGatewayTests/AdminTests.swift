import Foundation
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Testing

@Suite("Gateway administration: rouse gateway CLI and the admin endpoint", .timeLimit(.minutes(2)))
struct AdminTests {
    func rouse(_ arguments: [String]) async throws -> ChildProcess.Output {
        try await ChildProcess.run(
            try GatewayProcess.executable("rouse"), ["gateway"] + arguments, timeout: .seconds(30))
    }

    @Test("keys add/revoke take effect on new provider connections; devices revoke answers 410; lists")
    func cli() async throws {
        let h = try await Harness.start { $0.limits.sweepIntervalSeconds = 1 }
        let database = h.directory.path + "/gateway.sqlite"
        let channel = try await h.channel()
        let foreign = try await Provider.connect(
            port: h.gateway.providerPort, keyFile: "apns-key-same-team.p8", keyID: "ROUSEKEY03")
        #expect(await foreign.push(token: h.token).reason == "InvalidProviderToken")
        foreign.close()
        let added = try await rouse([
            "keys", "add", "--database", database, "--key-id", "ROUSEKEY03", "--team-id", "ROUSETEAM1",
            "--public-key", Repository.cert("apns-key-same-team.pub.pem"), "--topic", "com.example.rouse",
        ])
        #expect(added.status == 0, "\(added.stderr)")
        // The key cache refreshes within a second: retry on new connections until accepted.
        let deadline = ContinuousClock.now + .seconds(10)
        var status = 0
        while status != 200, ContinuousClock.now < deadline {
            let provider = try await Provider.connect(
                port: h.gateway.providerPort, keyFile: "apns-key-same-team.p8", keyID: "ROUSEKEY03")
            status = await provider.push(token: h.token).status
            provider.close()
            if status != 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(status == 200)

        // Revoked: pushes on a connection bound to the key are refused (within the key cache's second).
        let bound = try await Provider.connect(
            port: h.gateway.providerPort, keyFile: "apns-key-same-team.p8", keyID: "ROUSEKEY03")
        #expect(await bound.push(token: h.token).status == 200)
        #expect(try await rouse(["keys", "revoke", "--database", database, "ROUSEKEY03"]).status == 0)
        var reason: String?
        while reason != "InvalidProviderToken", ContinuousClock.now < deadline + .seconds(10) {
            reason = await bound.push(token: h.token).reason
            if reason != "InvalidProviderToken" { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(reason == "InvalidProviderToken")
        bound.close()

        let keys = try await rouse(["keys", "list", "--database", database, "--json"])
        #expect(keys.stdout.contains("\"keyID\":\"ROUSEKEY03\""))
        let tokens = try await rouse(["tokens", "list", "--database", database])
        #expect(tokens.stdout.contains(h.token))
        let devices = try await rouse(["devices", "list", "--database", database, "--json"])
        let list = try JSONSerialization.jsonObject(with: Data(devices.stdout.utf8)) as? [[String: Any]] ?? []
        let deviceID = try #require(list.first?["id"] as? String)
        #expect(list.first?["pending"] as? Int ?? 0 >= 2)
        #expect(try await rouse(["devices", "revoke", "--database", database, deviceID]).status == 0)
        // The open channel ends at the next sweep (skipping the pushes it carried meanwhile).
        var last: [String: String] = [:]
        while last["type"] != "revoked" && last["type"] != "end" {
            last = try await channel.next(timeout: .seconds(10))
        }
        #expect(last["type"] == "revoked")
        let answer = await h.provider.push(token: h.token)
        #expect(answer.status == 410)
        #expect(answer.reason == "Unregistered")
        #expect(try await h.device.call("GET", "/device/v1/tokens").json["error"] as? String == "deviceRevoked")
        #expect(try await rouse(["devices", "revoke", "--database", database, deviceID]).status != 0)
        let secret = try await rouse(["devices", "enroll-secret", "--database", database])
        let enrolled = try await DeviceClient.enroll(
            curl: h.curl, port: h.gateway.devicePort,
            secret: secret.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(try await enrolled.call("GET", "/device/v1/tokens").status == 200)
        await h.stop()
    }

    @Test("admin endpoint: health, Prometheus metrics, JSON views")
    func adminEndpoint() async throws {
        let h = try await Harness.start()
        await h.push(1, type: "background")
        let port = try #require(h.gateway.adminPort)
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil), on: providerLoop)
        func get(_ path: String) async -> (Int, String) {
            switch await client.send(
                HTTP2ClientRequest(method: "GET", path: path, authority: "localhost", scheme: "http"))
            {
            case .response(let status, _, let body): return (status, String(decoding: body, as: UTF8.self))
            default: return (-1, "")
            }
        }
        #expect(await get("/health") == (200, #"{"status":"ok"}"#))
        let (status, metrics) = await get("/metrics")
        #expect(status == 200)
        #expect(metrics.contains(#"rouse_gateway_pushes_in_total{type="background",outcome="stored"} 1"#))
        #expect(metrics.contains("rouse_gateway_pending_pushes 1"))
        #expect(metrics.contains("rouse_gateway_connected_devices"))
        #expect(await get("/v1/pending").1.contains(#""pushType":"background""#))
        #expect(await get("/v1/tokens").1.contains(h.token))
        #expect(await get("/v1/devices").1.contains(#""pending":1"#))
        #expect(await get("/nope").0 == 404)
        client.close()
        await h.stop()
    }
}
