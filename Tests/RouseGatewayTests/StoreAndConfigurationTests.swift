import Foundation
import RouseGateway
import RouseTestSupport
import Testing

@Suite("Gateway store and configuration")
struct StoreAndConfigurationTests {
    @Test("the SQLite store runs in WAL mode with synchronous=FULL")
    func durabilitySettings() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/store.sqlite"
        let store = try SQLiteGatewayStore(path: path)
        let settings = try store.durabilitySettings()
        #expect(settings.journalMode == "wal")
        #expect(settings.synchronous == 2)
        let id = try store.write { t in
            try t.insertPush(
                StoredPush(
                    id: 0, deviceID: "d1", token: "ab", topic: "t", pushType: "voip", priority: 10,
                    apnsID: "0a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d", collapseID: nil, expiration: nil,
                    expiresAt: 2_000, receivedAt: 1_000, payload: [1, 2, 3]))
        }
        let pending = try store.read { try $0.pending(deviceID: "d1", excluding: [], limit: 10, now: 1_500) }
        #expect(pending.map(\.id) == [id])
        #expect(pending.first?.payload == [1, 2, 3])
        #expect(try store.read { try $0.pending(deviceID: "d1", excluding: [], limit: 10, now: 2_000) }.isEmpty)
        #expect(try store.write { try $0.deleteExpired(now: 2_000) } == 1)
    }

    @Test("the example configurations in deploy/ parse, with topics for every provider credential")
    func exampleConfiguration() throws {
        let configuration = try GatewayConfiguration.load(path: Repository.root + "/deploy/rouse-gateway.json")
        #expect(configuration.provider.listen == "0.0.0.0:2197")
        #expect(configuration.databasePath == "/var/lib/rouse-gateway/gateway.sqlite")
        #expect(configuration.limits.maxExpirationSeconds == 30 * 86_400)
        #expect(configuration.providerCertificateTopics == ["com.example.app"])
        let loopback = try GatewayConfiguration.load(path: Repository.root + "/deploy/gateway-loopback.json")
        #expect(loopback.keys.map(\.topics) == [["com.example.rouse"]])
        #expect(loopback.providerCertificateTopics == ["com.example.rouse"])
    }

    @Test(
        "bad configurations are refused with the member at fault",
        arguments: [
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"}}"#,
                "$.database: missing (a SQLite file, or postgresql://…)"
            ),
            (#"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","typo":1}"#, "unknown member $.typo"),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","environment":"dev"}"#,
                "environment 'dev'"
            ),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","limits":{"window":0}}"#,
                "limits.window"
            ),
            (#"{"provider":{"listen":1},"device":{"listen":"y"},"database":"d"}"#, "$.provider.listen: expected"),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","#
                    + #""limits":{"maxPendingBytesPerToken":5119}}"#,
                "limits.maxPendingBytesPerToken must be at least 5120",
            ),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","#
                    + #""limits":{"maxPendingPushesPerDevice":0}}"#,
                "limits.maxPendingPushesPerDevice must be at least 1",
            ),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","keys":[{"keyID":"ROUSEKEY02","#
                    + #""teamID":"T","publicKey":"-----BEGIN PUBLIC KEY-----"}]}"#,
                "config.json: keys[0] (ROUSEKEY02).topics: missing: a key must name the bundle IDs it may push to",
            ),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","keys":[{"keyID":"K2","#
                    + #""teamID":"T","publicKey":"-----BEGIN PUBLIC KEY-----","topics":[]}]}"#,
                "keys[0] (K2).topics: empty",
            ),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","keys":[{"keyID":"K2","#
                    + #""teamID":"T","publicKey":"-----BEGIN PUBLIC KEY-----","topics":["*","com.example.app"]}]}"#,
                "keys[0] (K2).topics: \"*\" stands alone",
            ),
            (
                #"{"provider":{"listen":"x","clientCA":"ca.pem"},"device":{"listen":"y"},"database":"d"}"#,
                "provider.certificateTopics: missing",
            ),
            (
                #"{"provider":{"listen":"x","clientCA":"ca.pem","certificateTopics":["a,b"]},"device":{"listen":"y"},"#
                    + #""database":"d"}"#,
                "provider.certificateTopics: 'a,b' is not a bundle ID",
            ),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y","certificateTopics":["*"]},"database":"d"}"#,
                "unknown member $.device.certificateTopics",
            ),
            (
                #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","node":"gw 1"}"#,
                "$.node: 'gw 1': only letters, digits",
            ),
            (#"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","node":""}"#, "$.node: '': 1 to 40"),
            ("not json", "config.json: "),
        ])
    func badConfiguration(text: String, expected: String) {
        do {
            _ = try GatewayConfiguration.parse(data: Data(text.utf8), baseDirectory: "/etc", source: "config.json")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test("\"node\" names this gateway among the nodes sharing a PostgreSQL store; default: the host name")
    func nodeID() throws {
        let text = #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d","node":"gw-1.a_b"}"#
        let parsed = try GatewayConfiguration.parse(data: Data(text.utf8), baseDirectory: "/etc", source: "c.json")
        #expect(parsed.node == "gw-1.a_b")
        let plain = #"{"provider":{"listen":"x"},"device":{"listen":"y"},"database":"d"}"#
        let defaulted = try GatewayConfiguration.parse(data: Data(plain.utf8), baseDirectory: "/etc", source: "c.json")
        #expect(defaulted.node == GatewayConfiguration.defaultNode)
        #expect(GatewayConfiguration.nodeProblem(GatewayConfiguration.defaultNode) == nil)
    }
}
