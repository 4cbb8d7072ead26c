import Foundation
import RouseCurl
import RouseGateway
import RouseTestSupport
import RouseWire
import Testing

@Suite("Gateway crash safety: SIGKILL after 200, restart on the same database", .timeLimit(.minutes(3)))
struct CrashSafetyTests {
    @Test("every push answered 200 is delivered after a SIGKILL; none the device acknowledged comes again")
    func sigkillAfterOK() async throws {
        let directory = try TemporaryDirectory()
        let database = directory.path + "/gateway.sqlite"
        let first = try await GatewayProcess.start(directory: directory, database: database)
        // The test creates the enrollment secret in the same SQLite file, as `rouse gateway` does.
        let store = try SQLiteGatewayStore(path: database)
        let secret = try Gateway.makeEnrollmentSecret(
            store: store, now: Gateway.systemMilliseconds(), validity: .seconds(600))
        let curl = try CurlHTTPClient()
        let device = try await DeviceClient.enroll(curl: curl, port: first.devicePort, secret: secret)
        let token = try await device.token(topic: GatewayFixture.bundleID)

        let channel = try await device.channel()
        let provider = try await Provider.connect(port: first.providerPort)
        var ids: [String] = []
        for n in 1...10 {
            let answer = await provider.push(token: token, payload: #"{"n":\#(n)}"#)
            #expect(answer.status == 200, "push \(n): \(answer.status) \(answer.reason ?? "")")
            ids.append(try await channel.nextPush().id)
        }
        // The device acknowledges the first four (committed before the answer).
        let acked = try await device.ack(Array(ids.prefix(4)))
        #expect(acked.acked == 4)
        channel.close()
        // Offline pushes, the last one killed right after its 200.
        for n in 11...20 {
            let answer = await provider.push(token: token, payload: #"{"n":\#(n)}"#)
            #expect(answer.status == 200)
        }
        first.kill()
        provider.close()

        let second = try await GatewayProcess.start(directory: directory, database: database)
        let restarted = DeviceClient(curl: curl, port: second.devicePort, credential: device.credential)
        let again = try await restarted.channel()
        var seen: [Int] = []
        for _ in 5...20 {
            let push = try await again.nextPush()
            let payload = Data(base64Encoded: push.payload).map { String(decoding: $0, as: UTF8.self) } ?? ""
            let number = Int(payload.dropFirst(5).dropLast()) ?? -1
            seen.append(number)
        }
        #expect(seen == Array(5...20))
        // Nothing else is pending: a new push is the very next record.
        let provider2 = try await Provider.connect(port: second.providerPort)
        #expect(await provider2.push(token: token, payload: #"{"n":21}"#).status == 200)
        let next = try await again.nextPush()
        #expect(next.payload == Data(#"{"n":21}"#.utf8).base64EncodedString())
        provider2.close()
        again.close()
        #expect(second.terminate() == 0, "graceful exit on SIGTERM; stderr: \(second.stderr)")
        await curl.shutdown()
    }
}
