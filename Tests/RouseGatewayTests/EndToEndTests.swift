import Foundation
import RouseCurl
import RouseGateway
import RouseTestSupport
import RouseWire
import Testing

@Suite("Gateway end to end: provider → gateway → device", .timeLimit(.minutes(2)))
struct EndToEndTests {
    @Test("a push reaches the device channel with every field, and an acknowledged push is not sent again")
    func pushReachesDevice() async throws {
        let directory = try TemporaryDirectory()
        let gateway = try GatewayFixture.start(in: directory)
        let curl = try CurlHTTPClient()
        let device = try await DeviceClient.enroll(
            curl: curl, port: gateway.devicePort, secret: try gateway.makeEnrollmentSecret())
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let channel = try await device.channel()
        let hello = try await channel.next()
        #expect(hello.type == "hello")

        let provider = try await Provider.connect(port: gateway.providerPort)
        let apnsID = "0a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"
        let answer = await provider.push(
            token: token, priority: 5, collapseID: "room-1", apnsID: apnsID, payload: #"{"aps":{"alert":"hi"},"n":1}"#)
        #expect(answer.status == 200)
        #expect(answer.apnsID == apnsID)

        let push = try await channel.nextPush()
        #expect(push.token == token)
        #expect(push.topic == GatewayFixture.bundleID)
        #expect(push.pushType == "alert")
        #expect(push.priority == 5)
        #expect(push.apnsID == apnsID)
        #expect(push.collapseID == "room-1")
        let payload = Data(base64Encoded: push.payload).map { String(decoding: $0, as: UTF8.self) }
        #expect(payload == #"{"aps":{"alert":"hi"},"n":1}"#)
        let id = push.id
        #expect(try await device.ack([id]) == DeviceAckReply(acked: 1, unknown: 0))

        // Reconnect: the acknowledged push is gone; the next one is the first the channel carries.
        channel.close()
        let again = try await device.channel()
        _ = try await again.next()
        #expect(await provider.push(token: token, payload: #"{"n":2}"#).status == 200)
        let next = try await again.nextPush()
        #expect(Data(base64Encoded: next.payload).map { String(decoding: $0, as: UTF8.self) } == #"{"n":2}"#)

        provider.close()
        await curl.shutdown()
        await gateway.shutdown(gracePeriod: .seconds(1))
    }

    @Test("unacknowledged pushes are re-sent in order on reconnect")
    func redeliveryInOrder() async throws {
        let directory = try TemporaryDirectory()
        let gateway = try GatewayFixture.start(in: directory)
        let curl = try CurlHTTPClient()
        let device = try await DeviceClient.enroll(
            curl: curl, port: gateway.devicePort, secret: try gateway.makeEnrollmentSecret())
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let provider = try await Provider.connect(port: gateway.providerPort)
        for n in 1...5 { #expect(await provider.push(token: token, payload: #"{"n":\#(n)}"#).status == 200) }

        let first = try await device.channel()
        var ids: [String] = []
        for n in 1...5 {
            let push = try await first.nextPush()
            #expect(push.payload == Data(#"{"n":\#(n)}"#.utf8).base64EncodedString())
            ids.append(push.id)
        }
        try await device.ack(Array(ids.prefix(2)))
        first.close()

        let second = try await device.channel()
        for n in 3...5 {
            let push = try await second.nextPush()
            #expect(push.payload == Data(#"{"n":\#(n)}"#.utf8).base64EncodedString())
        }
        provider.close()
        await curl.shutdown()
        await gateway.shutdown(gracePeriod: .seconds(1))
    }

    @Test("a device certificate enrolls its CN and opens the channel")
    func certificateDevice() async throws {
        let directory = try TemporaryDirectory()
        let gateway = try GatewayFixture.start(in: directory)
        let curl = try CurlHTTPClient()
        let device = DeviceClient(
            curl: curl, port: gateway.devicePort,
            credential: .certificate(cert: Repository.cert("device.pem"), key: Repository.cert("device.key")))
        let (status, json) = try await device.call("POST", "/device/v1/enroll")
        #expect(status == 201)
        #expect(json["deviceID"] as? String == "rouse-device-1")
        #expect(try await device.call("POST", "/device/v1/enroll").status == 200)
        let token = try await device.token(topic: GatewayFixture.voipTopic)
        let channel = try await device.channel()
        let hello = try await channel.next()
        #expect(hello.hello?.device == "rouse-device-1")
        let provider = try await Provider.connect(port: gateway.providerPort)
        #expect(await provider.push(token: token, topic: GatewayFixture.voipTopic, type: "voip").status == 200)
        #expect(try await channel.nextPush().pushType == "voip")
        provider.close()
        await curl.shutdown()
        await gateway.shutdown(gracePeriod: .seconds(1))
    }
}

@Suite("Gateway end to end with `rouse send` as the provider", .timeLimit(.minutes(1)))
struct RouseSendToGatewayTests {
    @Test("a VoIP push sent with `rouse send --env https://127.0.0.1:…` reaches the device channel")
    func rouseSendReachesDevice() async throws {
        let harness = try await Harness.start()
        let voipToken = try await harness.device.token(topic: GatewayFixture.bundleID + ".voip")
        let channel = try await harness.channel()
        let out = try await ChildProcess.run(
            try Products.path("rouse"),
            [
                "send", "voip", "--token", voipToken, "--topic", GatewayFixture.bundleID, "--payload",
                #"{"aps":{},"caller":"Alice"}"#, "--env", "https://127.0.0.1:\(harness.gateway.providerPort)",
                "--ca-file", Repository.cert("ca.pem"), "--auth-key", Repository.cert("apns-key.p8"), "--key-id",
                "ROUSEKEY01", "--team-id", "ROUSETEAM1", "--json", "--quiet",
            ])
        #expect(out.status == 0, "\(out.stdout)\(out.stderr)")
        #expect(out.stdout.contains(#""outcome":"delivered""#))
        let push = try await channel.nextPush()
        #expect(push.token == voipToken)
        #expect(push.pushType == "voip")
        #expect(push.expiration == 0)
        let payload = Data(base64Encoded: push.payload).map { String(decoding: $0, as: UTF8.self) }
        #expect(payload == #"{"aps":{},"caller":"Alice"}"#)
        await harness.stop()
    }
}
