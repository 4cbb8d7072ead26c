import Foundation
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import RouseWire
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
        var last = try await channel.next(timeout: .seconds(10))
        while last.type != "revoked" && last.type != "end" {
            last = try await channel.next(timeout: .seconds(10))
        }
        #expect(last == .record(.revoked))
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
        #expect(await get("/v1/tokens?reveal=tokens").1.contains(h.token))
        #expect(!(await get("/v1/tokens").1.contains(h.token)), "tokens are redacted unless asked for")
        #expect(await get("/v1/devices").1.contains(#""pending":1"#))
        #expect(await get("/nope").0 == 404)
        client.close()
        await h.stop()
    }

    @Test("POST /device/v1/handlers: stored per device, in /v1/devices and devices list --json; 400s; 401")
    func handlerReports() async throws {
        let h = try await Harness.start()
        let port = try #require(h.gateway.adminPort)
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil), on: providerLoop)
        func devices() async throws -> [[String: Any]] {
            let answer = await client.send(
                HTTP2ClientRequest(method: "GET", path: "/v1/devices", authority: "localhost", scheme: "http"))
            guard case .response(200, _, let body) = answer else { throw FixtureError("/v1/devices: \(answer)") }
            return try JSONSerialization.jsonObject(with: Data(body)) as? [[String: Any]] ?? []
        }
        #expect((try await devices().first?["handlers"] as? [Any])?.isEmpty == true)

        let body =
            #"{"handlers":[{"topic":"com.example.rouse","strikes":2,"voipBlocked":false},"#
            + #"{"topic":"com.example.other","strikes":3,"voipBlocked":true}]}"#
        let stored = try await h.device.call("POST", "/device/v1/handlers", body: body)
        #expect(stored.status == 200, "\(stored.json)")
        #expect(stored.json["handlers"] as? Int == 2)
        var handlers = try await devices().first?["handlers"] as? [[String: Any]] ?? []
        #expect(handlers.count == 2)
        #expect(handlers.first?["topic"] as? String == "com.example.other")
        #expect(handlers.first?["strikes"] as? Int == 3)
        #expect(handlers.first?["voipBlocked"] as? Bool == true)
        #expect(handlers.last?["topic"] as? String == "com.example.rouse")
        #expect(handlers.last?["strikes"] as? Int == 2)
        #expect(handlers.last?["voipBlocked"] as? Bool == false)
        #expect(handlers.last?["reportedAt"] as? Int ?? 0 > 0)

        // A new report replaces the old one.
        let replaced = try await h.device.call(
            "POST", "/device/v1/handlers",
            body: #"{"handlers":[{"topic":"com.example.rouse","strikes":0,"voipBlocked":false}]}"#)
        #expect(replaced.status == 200)
        handlers = try await devices().first?["handlers"] as? [[String: Any]] ?? []
        #expect(handlers.count == 1)
        #expect(handlers.first?["strikes"] as? Int == 0)

        // Bad input: precise 400s naming the JSON path; nothing stored.
        let cases: [(String, String, String)] = [
            ("not json", "badJSON", "$: "),
            (#"{"handlers":[{"topic":"t","strikes":"2","voipBlocked":false}]}"#, "badJSON", "handlers[0].strikes"),
            (#"{"handlers":[{"topic":"t","strikes":1}]}"#, "badJSON", "voipBlocked"),
            (#"{"handlers":[{"topic":"","strikes":1,"voipBlocked":false}]}"#, "badTopic", "$.handlers[0].topic"),
            (
                #"{"handlers":[{"topic":"a","strikes":0,"voipBlocked":false},{"topic":"b","strikes":-1,"voipBlocked":false}]}"#,
                "badHandlers", "$.handlers[1].strikes"
            ),
            (
                #"{"handlers":[{"topic":"a","strikes":0,"voipBlocked":false},{"topic":"a","strikes":0,"voipBlocked":false}]}"#,
                "badHandlers", "$.handlers[1].topic"
            ),
        ]
        for (bad, code, path) in cases {
            let answer = try await h.device.call("POST", "/device/v1/handlers", body: bad)
            #expect(answer.status == 400, "\(bad)")
            #expect(answer.json["error"] as? String == code, "\(bad): \(answer.json)")
            #expect((answer.json["detail"] as? String ?? "").contains(path), "\(bad): \(answer.json)")
        }
        let many = (0...64).map { #"{"topic":"t\#($0)","strikes":0,"voipBlocked":false}"# }.joined(separator: ",")
        let tooMany = try await h.device.call("POST", "/device/v1/handlers", body: #"{"handlers":[\#(many)]}"#)
        #expect(tooMany.status == 413)
        #expect(tooMany.json["error"] as? String == "tooManyHandlers")
        #expect(try await h.device.call("GET", "/device/v1/handlers").status == 405)

        // Unauthenticated.
        let anonymous = DeviceClient(curl: h.curl, port: h.gateway.devicePort, credential: .none)
        let refused = try await anonymous.call(
            "POST", "/device/v1/handlers",
            body: #"{"handlers":[{"topic":"x","strikes":9,"voipBlocked":true}]}"#)
        #expect(refused.status == 401)
        #expect(refused.json["error"] as? String == "missingCredential")
        handlers = try await devices().first?["handlers"] as? [[String: Any]] ?? []
        #expect(handlers.count == 1 && handlers.first?["strikes"] as? Int == 0)

        // The CLI's JSON device list shows the same.
        let listed = try await rouse(["devices", "list", "--database", h.directory.path + "/gateway.sqlite", "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains(#""handlers":[{"topic":"com.example.rouse","strikes":0,"voipBlocked":false,"#))
        client.close()
        await h.stop()
    }
}
