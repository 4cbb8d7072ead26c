import Foundation
import InMemoryLogging
import Logging
import RouseCurl
import RouseGateway
import RouseTestSupport
import Testing

@Suite("Gateway provider credentials name their topics: keys and certificates", .timeLimit(.minutes(2)))
struct TopicBindingTests {
    static func otherTeamKey(topics: [String]) throws -> GatewayConfiguration.Key {
        let pem = try String(contentsOfFile: Repository.cert("apns-key-other-team.pub.pem"), encoding: .utf8)
        return GatewayConfiguration.Key(keyID: "ROUSEKEY02", teamID: "ROUSETEAM2", publicKeyPEM: pem, topics: topics)
    }

    /// A push with the test PKI's provider certificate (topics com.example.rouse, .voip, .complication).
    static func certificatePush(_ h: Harness, token: String, topic: String) async throws -> (Int, String) {
        var request = h.device.request("POST", "/3/device/\(token)", body: #"{"n":1}"#)
        request.url = "https://127.0.0.1:\(h.gateway.providerPort)/3/device/\(token)"
        request.headers = [(name: "apns-topic", value: topic), (name: "apns-push-type", value: "alert")]
        request.tls.clientCertificate = .pem(
            certificateFile: Repository.cert("provider.pem"), keyFile: Repository.cert("provider.key"))
        let response = try await h.curl.send(request)
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    @Test("another team's key reaches only its own topics, not this team's tokens")
    func keyTopicsBindTenants() async throws {
        let key = try Self.otherTeamKey(topics: ["com.example.other"])
        let h = try await Harness.start { $0.keys.append(key) }
        let other = try await Provider.connect(
            port: h.gateway.providerPort, keyFile: "apns-key-other-team.p8", keyID: "ROUSEKEY02", teamID: "ROUSETEAM2")
        let crossed = await other.push(token: h.token)
        #expect(crossed.status == 400)
        #expect(crossed.reason == "TopicDisallowed")
        let ownToken = try await h.device.token(topic: "com.example.other")
        #expect(await other.push(token: ownToken, topic: "com.example.other").status == 200)
        other.close()
        await h.stop()
    }

    @Test("a certificate pushes only to topics both it and provider.certificateTopics name")
    func certificateTopicsBindTheCA() async throws {
        let h = try await Harness.start { $0.providerCertificateTopics = ["com.example.other"] }
        let (status, body) = try await Self.certificatePush(h, token: h.token, topic: GatewayFixture.bundleID)
        #expect(status == 400)
        #expect(body.contains("TopicDisallowed"))
        await h.stop()
        let any = try await Harness.start { $0.providerCertificateTopics = ["*"] }
        #expect(try await Self.certificatePush(any, token: any.token, topic: GatewayFixture.bundleID).0 == 200)
        // "*" still needs the certificate to list the topic.
        let otherToken = try await any.device.token(topic: "com.example.other")
        #expect(try await Self.certificatePush(any, token: otherToken, topic: "com.example.other").0 == 400)
        await any.stop()
    }

    @Test("a key or a client CA without topics does not start, and the error names it")
    func missingTopicsRefuseToStart() throws {
        let directory = try TemporaryDirectory()
        var keyless = try GatewayFixture.configuration(database: directory.path + "/a.sqlite")
        keyless.keys.append(try Self.otherTeamKey(topics: []))
        #expect {
            _ = try Gateway(configuration: keyless)
        } throws: {
            "\($0)".contains("keys[1] (ROUSEKEY02).topics: empty")
        }
        var certificates = try GatewayFixture.configuration(database: directory.path + "/b.sqlite")
        certificates.providerCertificateTopics = nil
        #expect {
            _ = try Gateway(configuration: certificates)
        } throws: {
            "\($0)".contains("provider.certificateTopics: missing")
        }
    }

    @Test("rouse-gateway with a key without topics exits 78 naming the key")
    func missingTopicsInTheFile() async throws {
        let directory = try TemporaryDirectory()
        let certs = Repository.root + "/certs"
        let config = """
            {"provider": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem",
                          "privateKey": "\(certs)/server.key"},
             "device": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem",
                        "privateKey": "\(certs)/server.key"},
             "database": "\(directory.path)/gateway.sqlite",
             "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "\(certs)/apns-key.pub.pem",
                       "topics": ["com.example.rouse"]},
                      {"keyID": "ROUSEKEY02", "teamID": "ROUSETEAM2",
                       "publicKey": "\(certs)/apns-key-other-team.pub.pem"}]}
            """
        let path = directory.path + "/gateway.json"
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        let run = try await ChildProcess.run(
            try GatewayProcess.executable(), ["--config", path], timeout: .seconds(15))
        #expect(run.status == 78, "stdout: \(run.stdout) stderr: \(run.stderr)")
        #expect(run.stderr.contains("keys[1] (ROUSEKEY02).topics: missing"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/gateway.sqlite"))
    }

    @Test("keys and certificates that may push to every topic (\"*\") are warned at start, with the key id")
    func wildcardsAreWarned() async throws {
        let directory = try TemporaryDirectory()
        let log = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in log }
        logger.logLevel = .warning
        let key = try Self.otherTeamKey(topics: ["*"])
        let configuration = try GatewayFixture.configuration(database: directory.path + "/gateway.sqlite") {
            $0.keys.append(key)
            $0.providerCertificateTopics = ["*"]
        }
        let gateway = try Gateway(configuration: configuration, logger: logger)
        await gateway.shutdown(gracePeriod: .seconds(1))
        let warnings = log.entries.filter { $0.level == .warning }
        let warned = warnings.first { "\($0.message)".contains("provider key may push to every topic") }
        #expect(warned?.metadata["key-id"]?.description == "ROUSEKEY02")
        #expect(warnings.filter { "\($0.message)".contains("provider key may push to every topic") }.count == 1)
        #expect(warnings.contains { "\($0.message)".contains("provider certificates may push to every topic") })
    }
}
