import Foundation
import RouseCurl
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import RouseWire
import Synchronization
import Testing

@Suite("Gateway authentication and bad input, both sides", .timeLimit(.minutes(2)))
struct AuthenticationTests {
    @Test("providers: bad, missing, foreign and stale tokens; unknown device tokens; wrong topic")
    func providerFailures() async throws {
        let h = try await Harness.start()
        #expect(
            await h.provider.push(token: h.token, authorization: "bearer not.a.jwt").reason == "InvalidProviderToken")
        #expect(await h.provider.push(token: h.token, authorization: "").reason == "MissingProviderToken")
        let foreign = try await Provider.connect(
            port: h.gateway.providerPort, keyFile: "apns-key-other-team.p8", keyID: "ROUSEKEY02", teamID: "ROUSETEAM2")
        #expect(await foreign.push(token: h.token).reason == "InvalidProviderToken")
        foreign.close()
        let stale = try await Provider.connect(
            port: h.gateway.providerPort, issuedAt: Gateway.systemMilliseconds() / 1000 - 7200)
        let staleAnswer = await stale.push(token: h.token)
        #expect(staleAnswer.status == 403)
        #expect(staleAnswer.reason == "ExpiredProviderToken")
        stale.close()
        #expect(await h.provider.push(token: String(repeating: "ab", count: 32)).reason == "BadDeviceToken")
        #expect(await h.provider.push(token: "xyz").reason == "BadDeviceToken")
        let wrongTopic = await h.provider.push(token: h.token, topic: GatewayFixture.voipTopic, type: "voip")
        #expect(wrongTopic.status == 400)
        #expect(wrongTopic.reason == "DeviceTokenNotForTopic")
        #expect(await h.provider.push(token: h.token, topic: "com.example.other").reason == "TopicDisallowed")
        let big = String(repeating: "x", count: 5000)
        let tooLarge = await h.provider.push(token: h.token, payload: #"{"a":"\#(big)"}"#)
        #expect(tooLarge.status == 413)
        #expect(await h.provider.push(token: h.token, type: "background", priority: 10).reason == "BadPriority")
        // Nothing above reached the device; the sentinel is the first push.
        await h.push(1)
        let channel = try await h.channel()
        #expect(try await h.numbers(channel, count: 1) == [1])
        await h.stop()
    }

    @Test("providers: a client certificate carrying the topics authenticates without a token")
    func providerCertificate() async throws {
        let h = try await Harness.start()
        let curl = h.curl
        var request = h.device.request("POST", "/3/device/\(h.token)", body: #"{"n":7}"#)
        request.url = "https://127.0.0.1:\(h.gateway.providerPort)/3/device/\(h.token)"
        request.headers = [
            (name: "apns-topic", value: GatewayFixture.bundleID), (name: "apns-push-type", value: "alert"),
        ]
        request.tls.clientCertificate = .pem(
            certificateFile: Repository.cert("provider.pem"), keyFile: Repository.cert("provider.key"))
        let response = try await curl.send(request)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        request.tls.clientCertificate = .pem(
            certificateFile: Repository.cert("provider-sandbox.pem"), keyFile: Repository.cert("provider-sandbox.key"))
        let sandbox = try await curl.send(request)
        #expect(sandbox.status == 403)
        #expect(String(decoding: sandbox.body, as: UTF8.self).contains("BadCertificateEnvironment"))
        let channel = try await h.channel()
        #expect(try await h.numbers(channel, count: 1) == [7])
        await h.stop()
    }

    @Test("devices: missing, malformed, wrong and unknown credentials; reused secrets; untrusted certificates")
    func deviceFailures() async throws {
        let h = try await Harness.start()
        let port = h.gateway.devicePort
        let anonymous = DeviceClient(curl: h.curl, port: port, credential: .none)
        #expect(try await anonymous.call("GET", "/device/v1/tokens").json["error"] as? String == "missingCredential")
        let garbage = DeviceClient(curl: h.curl, port: port, credential: .bearer("no-dot"))
        #expect(try await garbage.call("GET", "/device/v1/tokens").status == 401)
        guard case .bearer(let credential) = h.device.credential else { throw FixtureError("bearer device expected") }
        let wrong = DeviceClient(
            curl: h.curl, port: port,
            credential: .bearer(String(credential.dropLast(64)) + String(repeating: "0", count: 64)))
        let wrongAnswer = try await wrong.call("GET", "/device/v1/tokens")
        #expect(wrongAnswer.status == 401)
        #expect(wrongAnswer.json["error"] as? String == "badCredential")
        let unknown = DeviceClient(
            curl: h.curl, port: port, credential: .bearer("dnobody." + String(repeating: "0", count: 64)))
        #expect(try await unknown.call("GET", "/device/v1/tokens").json["error"] as? String == "badCredential")
        do {
            _ = try await wrong.channel()
            Issue.record("a wrong credential opened a channel")
        } catch let refused as ChannelRefused {
            #expect(refused.status == 401)
        }

        let secret = try h.gateway.makeEnrollmentSecret()
        _ = try await DeviceClient.enroll(curl: h.curl, port: port, secret: secret)
        let reused = try await anonymous.call("POST", "/device/v1/enroll", body: #"{"secret":"\#(secret)"}"#)
        #expect(reused.status == 403)
        #expect(reused.json["error"] as? String == "badEnrollmentSecret")

        let untrusted = DeviceClient(
            curl: h.curl, port: port,
            credential: .certificate(
                cert: Repository.cert("device-unknown-ca.pem"), key: Repository.cert("device-unknown-ca.key")))
        let untrustedAnswer = try await untrusted.call("POST", "/device/v1/enroll")
        #expect(untrustedAnswer.status == 401)
        #expect(try await untrusted.call("GET", "/device/v1/tokens").json["error"] as? String == "badCertificate")
        await h.stop()
    }

    @Test("devices: unknown id, wrong secret, revoked device's wrong secret: one answer; 403 only with its credential")
    func noDeviceExistenceOracle() async throws {
        let h = try await Harness.start()
        guard case .bearer(let credential) = h.device.credential else { throw FixtureError("bearer device expected") }
        let deviceID = String(credential.prefix { $0 != "." })
        let zeros = String(repeating: "0", count: 64)
        func answer(_ bearer: String) async throws -> String {
            let client = DeviceClient(curl: h.curl, port: h.gateway.devicePort, credential: .bearer(bearer))
            let (status, json) = try await client.call("GET", "/device/v1/tokens")
            return "\(status) \(json["error"] as? String ?? "-") \(json["detail"] as? String ?? "-")"
        }
        let unknown = try await answer("dnobody." + zeros)
        #expect(unknown.hasPrefix("401 badCredential "))
        #expect(try await answer(deviceID + "." + zeros) == unknown)

        #expect(try h.gateway.store.write { try $0.revokeDevice(deviceID, at: Gateway.systemMilliseconds()) })
        #expect(try await answer(deviceID + "." + zeros) == unknown)
        let wrong = DeviceClient(curl: h.curl, port: h.gateway.devicePort, credential: .bearer(deviceID + "." + zeros))
        do {
            _ = try await wrong.channel()
            Issue.record("a wrong credential opened a channel")
        } catch let refused as ChannelRefused {
            #expect(refused.status == 401)
        }
        // The device itself, with its credential, learns that it is revoked (its agent stops on this).
        let own = try await h.device.call("GET", "/device/v1/tokens")
        #expect(own.status == 403)
        #expect(own.json["error"] as? String == "deviceRevoked")
        await h.stop()
    }

    @Test("devices: garbage bodies and acknowledgements get precise errors; unknown ids are counted")
    func deviceGarbage() async throws {
        let h = try await Harness.start { $0.limits.maxAckIDs = 10 }
        let d = h.device
        let notJSON = try await d.call("POST", "/device/v1/ack", body: "{nope")
        #expect(notJSON.status == 400)
        #expect(notJSON.json["error"] as? String == "badJSON")
        let wrongType = try await d.call("POST", "/device/v1/ack", body: #"{"ids":[1,2]}"#)
        #expect(wrongType.status == 400)
        #expect((wrongType.json["detail"] as? String)?.contains("$.ids") == true)
        let badID = try await d.call("POST", "/device/v1/ack", body: #"{"ids":["12x"]}"#)
        #expect(badID.json["detail"] as? String == "$.ids[0]: '12x' is not a delivery id")
        let many = (1...11).map { "\"\($0)\"" }.joined(separator: ",")
        #expect(try await d.call("POST", "/device/v1/ack", body: #"{"ids":[\#(many)]}"#).status == 413)
        let unknown = try await d.ack(["999", "1000"])
        #expect(unknown == DeviceAckReply(acked: 0, unknown: 2))
        #expect(
            try await d.call("POST", "/device/v1/tokens", body: #"{"topic":""}"#).json["error"] as? String == "badTopic"
        )
        #expect(try await d.call("PUT", "/device/v1/tokens").status == 405)
        #expect(try await d.call("GET", "/device/v1/nothing").status == 404)
        #expect(try await d.call("DELETE", "/device/v1/tokens/zz").status == 400)
        // Another device cannot acknowledge (delete) this device's pushes.
        await h.push(1)
        let other = try await DeviceClient.enroll(
            curl: h.curl, port: h.gateway.devicePort, secret: try h.gateway.makeEnrollmentSecret())
        let channel = try await h.channel()
        let push = try await channel.nextPush()
        #expect(try await other.ack([push.id]) == DeviceAckReply(acked: 0, unknown: 1))
        channel.close()
        let again = try await h.channel()
        #expect(try await h.numbers(again, count: 1) == [1])
        await h.stop()
    }
}

@Suite("Gateway device connections: keepalive", .timeLimit(.minutes(1)))
struct KeepaliveTests {
    @Test("a burst of HTTP/2 PINGs is answered and the connection keeps serving")
    func pings() async throws {
        let h = try await Harness.start()
        let acknowledged = PingCounter()
        var tls = TLSConfiguration()
        tls.trustRootsFile = Repository.cert("ca.pem")
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: h.gateway.devicePort, tls: tls), on: providerLoop
        ) { event in
            if case .pingAcknowledged = event { acknowledged.add() }
        }
        for _ in 0..<200 { client.ping() }
        guard case .bearer(let credential) = h.device.credential else { throw FixtureError("bearer device expected") }
        let result = await client.send(
            HTTP2ClientRequest(
                method: "GET", path: "/device/v1/tokens", authority: "localhost",
                headers: [HTTP2Header("authorization", "Bearer \(credential)")]))
        guard case .response(let status, _, _) = result else { throw FixtureError("request failed: \(result)") }
        #expect(status == 200)
        #expect(acknowledged.value > 0)
        client.close()
        await h.stop()
    }
}

final class PingCounter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

@Suite("Gateway provider connections: APNs stream rules", .timeLimit(.minutes(1)))
struct ProviderStreamTests {
    @Test("a token connection gets one stream until its first valid token, then the full limit")
    func oneStreamUntilToken() async throws {
        let h = try await Harness.start()
        let limits = SettingsLog()
        var tls = TLSConfiguration()
        tls.trustRootsFile = Repository.cert("ca.pem")
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: h.gateway.providerPort, tls: tls), on: providerLoop
        ) { event in
            if case .settings(let streams) = event { limits.add(streams) }
        }
        let provider = Provider(client: client, jwt: h.provider.jwt)
        #expect(await provider.push(token: h.token, authorization: "bearer bad").reason == "InvalidProviderToken")
        #expect(limits.values.last == 1)
        #expect(await provider.push(token: h.token).status == 200)
        #expect(limits.values.last == 1000)
        provider.close()
        await h.stop()
    }
}

final class SettingsLog: Sendable {
    private let list = Mutex<[UInt32]>([])
    func add(_ value: UInt32) { list.withLock { $0.append(value) } }
    var values: [UInt32] { list.withLock { $0 } }
}
