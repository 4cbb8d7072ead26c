import Foundation
import RouseAPNs
import RouseClock
import RouseCurl
import RouseGateway
import RouseTestSupport
import Testing

@Suite("Gateway provider key revocation: across restarts and on live connections", .timeLimit(.minutes(3)))
struct KeyRevocationTests {
    func rouse(_ arguments: [String]) async throws -> ChildProcess.Output {
        try await ChildProcess.run(
            try GatewayProcess.executable("rouse"), ["gateway"] + arguments, timeout: .seconds(30))
    }

    /// One push on a new connection with ROUSEKEY01.
    func pushOnce(port: UInt16, token: String) async throws -> Provider.Answer {
        let provider = try await Provider.connect(port: port)
        defer { provider.close() }
        return await provider.push(token: token)
    }

    /// Pushes on new connections until the answer is `status` (the key cache refreshes within a second).
    func pushUntil(_ status: Int, port: UInt16, token: String) async throws -> Provider.Answer {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let answer = try await pushOnce(port: port, token: token)
            if answer.status == status || ContinuousClock.now > deadline { return answer }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    @Test("a configured key revoked with the CLI stays revoked after a restart, warned; only unrevoke re-enables it")
    func revocationSurvivesRestart() async throws {
        let directory = try TemporaryDirectory()
        let database = directory.path + "/gateway.sqlite"
        let first = try await GatewayProcess.start(directory: directory, database: database)
        let store = try SQLiteGatewayStore(path: database)
        let secret = try Gateway.makeEnrollmentSecret(
            store: store, now: Gateway.systemMilliseconds(), validity: .seconds(600))
        let curl = try CurlHTTPClient()
        let device = try await DeviceClient.enroll(curl: curl, port: first.devicePort, secret: secret)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        #expect(try await pushUntil(200, port: first.providerPort, token: token).status == 200)

        #expect(try await rouse(["keys", "revoke", "--database", database, "ROUSEKEY01"]).status == 0)
        #expect(try await pushUntil(403, port: first.providerPort, token: token).reason == "InvalidProviderToken")
        #expect(first.terminate() == 0, "stderr: \(first.stderr)")

        // The same configuration (which lists ROUSEKEY01) on the same database: still revoked, and said so.
        let second = try await GatewayProcess.start(directory: directory, database: database)
        let refused = try await pushOnce(port: second.providerPort, token: token)
        #expect(refused.status == 403)
        #expect(refused.reason == "InvalidProviderToken")
        let warning = second.stderr.split(separator: "\n").first { $0.contains("configured provider key is revoked") }
        #expect(warning?.contains("ROUSEKEY01") == true, "stderr: \(second.stderr)")
        let listed = try await rouse(["keys", "list", "--database", database, "--json"])
        #expect(listed.stdout.contains(#""keyID":"ROUSEKEY01""#))
        #expect(!listed.stdout.contains(#""revokedAt":null"#), "\(listed.stdout)")

        // `keys add` of the revoked key updates it but does not re-enable it; `keys unrevoke` does.
        let added = try await rouse([
            "keys", "add", "--database", database, "--key-id", "ROUSEKEY01", "--team-id", "ROUSETEAM1",
            "--public-key", Repository.cert("apns-key.pub.pem"), "--topic", GatewayFixture.bundleID, "--json",
        ])
        #expect(added.stdout.contains(#""revoked":true"#), "\(added.stdout) \(added.stderr)")
        try await Task.sleep(for: .milliseconds(1200))
        #expect(try await pushOnce(port: second.providerPort, token: token).status == 403)
        #expect(try await rouse(["keys", "unrevoke", "--database", database, "ROUSEKEY01"]).status == 0)
        #expect(try await rouse(["keys", "unrevoke", "--database", database, "ROUSEKEY01"]).status != 0)
        #expect(try await pushUntil(200, port: second.providerPort, token: token).status == 200)
        #expect(second.terminate() == 0, "stderr: \(second.stderr)")
        await curl.shutdown()
    }

    @Test("a key switched to on a live connection is checked for revocation, not only the first-bound key")
    func everyKeyOnALiveConnection() async throws {
        let clock = ManualClock.fromNow()
        let pem = try String(contentsOfFile: Repository.cert("apns-key-same-team.pub.pem"), encoding: .utf8)
        let h = try await Harness.start(clock: clock) { configuration in
            configuration.keys.append(
                GatewayConfiguration.Key(
                    keyID: "ROUSEKEY03", teamID: "ROUSETEAM1", publicKeyPEM: pem, topics: [GatewayFixture.bundleID]))
        }
        await h.push(1)  // binds ROUSEKEY01 to the connection
        // A new token is allowed after 20 minutes; the team's other key may take over the connection.
        clock.advance(by: .seconds(21 * 60))
        let privateKey = try ProviderToken.privateKey(
            pem: String(contentsOfFile: Repository.cert("apns-key-same-team.p8"), encoding: .utf8))
        let issuedAt = clock.wallMilliseconds / 1000
        let other = try ProviderToken(keyID: "ROUSEKEY03", teamID: "ROUSETEAM1", issuedAt: issuedAt)
            .signed(with: privateKey)
        let switched = await h.provider.push(token: h.token, authorization: "bearer \(other)")
        #expect(switched.status == 200, "\(switched.reason ?? "")")

        #expect(try h.gateway.store.write { try $0.revokeProviderKey("ROUSEKEY03", at: clock.wallMilliseconds) })
        var answer = switched
        let deadline = ContinuousClock.now + .seconds(5)
        while answer.status == 200, ContinuousClock.now < deadline {
            // The gateway reads its provider keys at most once a second of its clock.
            clock.advance(by: .seconds(1))
            try await Task.sleep(for: .milliseconds(100))
            answer = await h.provider.push(token: h.token, authorization: "bearer \(other)")
        }
        #expect(answer.status == 403)
        #expect(answer.reason == "InvalidProviderToken")
        // The first-bound key was not revoked: it still pushes on a new connection.
        let fresh = try await Provider.connect(port: h.gateway.providerPort, issuedAt: clock.wallMilliseconds / 1000)
        #expect(await fresh.push(token: h.token).status == 200)
        fresh.close()
        await h.stop()
    }
}
