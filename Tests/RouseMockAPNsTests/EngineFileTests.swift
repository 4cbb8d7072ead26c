import RouseAPNs
import RouseMockAPNs
import Testing

@Suite("Engine: --tokens and --faults files")
struct EngineFileTests {
    @Test func tokensFile() throws {
        let json = """
            {"unknownTokens": "reject", "tokens": [
              {"token": "AABB", "topics": ["com.example.app.voip"]},
              {"token": "ccdd", "environment": "production"},
              {"token": "eeff", "state": "unregistered", "unregisteredAt": 1767225600000},
              {"token": "0011", "state": "expired"}
            ]}
            """
        let registry = try DeviceTokenRegistry.parse(json: Array(json.utf8))
        #expect(registry.count == 4)
        #expect(registry.unknownTokens == .reject)
        #expect(registry.check(token: "aabb", topic: "com.example.app.voip", environment: .sandbox) == nil)
        #expect(
            registry.check(token: "AABB", topic: "com.example.app", environment: .sandbox)?.reason
                == .deviceTokenNotForTopic)
        #expect(registry.check(token: "ccdd", topic: "x", environment: .sandbox)?.reason == .badDeviceToken)
        #expect(
            registry.check(token: "eeff", topic: "x", environment: .sandbox)
                == .init(reason: .unregistered, timestamp: 1_767_225_600_000))
        #expect(registry.check(token: "0011", topic: "x", environment: .sandbox)?.reason == .expiredToken)
        #expect(registry.check(token: "9999", topic: "x", environment: .sandbox)?.reason == .badDeviceToken)
    }

    @Test(arguments: [
        ("", "$"),
        ("[]", "$"),
        ("{}", "$.tokens"),
        (#"{"tokens": [{"topics": []}]}"#, "$.tokens[0].token"),
        (#"{"tokens": [{"token": "xyz"}]}"#, "$.tokens[0].token"),
        (#"{"tokens": [{"token": "ab", "environment": "staging"}]}"#, "$.tokens[0].environment"),
        (#"{"tokens": [{"token": "ab", "state": "gone"}]}"#, "$.tokens[0].state"),
        (#"{"tokens": [{"token": "ab", "topics": "com.x"}]}"#, "$.tokens[0].topics"),
        (#"{"unknownTokens": "maybe", "tokens": []}"#, "$.unknownTokens"),
    ])
    func badTokensFile(json: String, path: String) {
        do {
            _ = try DeviceTokenRegistry.parse(json: Array(json.utf8))
            Issue.record("no error")
        } catch {
            #expect(error == .badTokensFile(""))
            #expect(error.detail.hasPrefix(path), "\(error.detail)")
        }
    }

    @Test func faultsFile() throws {
        let json = """
            {"faults": [
              {"id": "shutdown-at-500", "match": {"nth": 500}, "action": {"goAway": {"reason": "Shutdown"}}, "times": 1},
              {"match": {"every": 100}, "action": {"refusedStream": {}}},
              {"match": {"token": "A1B2"}, "action": {"latency": {"ms": 250}}},
              {"match": {"afterMs": 10000, "untilMs": 12000}, "action": {"blackhole": {}}},
              {"match": {"nth": 1000}, "action": {"status": {"status": 503, "reason": "ServiceUnavailable", "count": 50}}},
              {"match": {"nth": 1}, "action": {"goAway": {"code": "ENHANCE_YOUR_CALM", "lastStreamID": 0, "debug": "Maximum active streams violated for this endpoint."}}},
              {"action": {"tcpReset": {}}},
              {"action": {"idleTimeout": {}}},
              {"action": {"shutdown": {}}},
              {"action": {"status": {"reason": "InternalServerError"}}},
              {"action": {"goAway": {"code": 2, "lastStreamID": "previous"}}}
            ]}
            """
        let rules = try MockFaultScript.parse(json: Array(json.utf8))
        #expect(rules.count == 11)
        #expect(rules[0].id == "shutdown-at-500")
        #expect(rules[0].times == 1)
        #expect(rules[0].action == .shutdown)
        #expect(rules[1].id == "fault-1")
        #expect(rules[1].match.every == 100)
        #expect(rules[2].match.deviceToken == "a1b2")
        #expect(rules[2].action == .latency(milliseconds: 250))
        #expect(rules[3].match.afterMilliseconds == 10000)
        #expect(rules[4].action == .status(reason: .serviceUnavailable, status: 503, count: 50))
        #expect(
            rules[5].action
                == .goAway(
                    MockGoAway(
                        errorCode: 0xB, lastStreamID: .id(0),
                        debugData: Array("Maximum active streams violated for this endpoint.".utf8)))
        )
        #expect(rules[6].action == .tcpReset)
        #expect(rules[7].action == .idleTimeout)
        #expect(rules[9].action == .status(reason: .internalServerError, status: 500, count: 1))
        #expect(rules[10].action == .goAway(MockGoAway(errorCode: 2, lastStreamID: .previous, debugData: [])))
    }

    @Test(arguments: [
        ("nope", "$"),
        (#"{"faults": [{}]}"#, "$.faults[0].action"),
        (#"{"faults": [{"action": {}}]}"#, "$.faults[0].action"),
        (#"{"faults": [{"action": {"tcpReset": {}, "blackhole": {}}}]}"#, "$.faults[0].action"),
        (#"{"faults": [{"match": {"every": 0}, "action": {"tcpReset": {}}}]}"#, "$.faults[0].match.every"),
        (#"{"faults": [{"match": {"nth": "x"}, "action": {"tcpReset": {}}}]}"#, "$.faults[0].match.nth"),
        (#"{"faults": [{"match": {"token": "zz"}, "action": {"tcpReset": {}}}]}"#, "$.faults[0].match.token"),
        (#"{"faults": [{"action": {"goAway": {"code": "NOPE"}}}]}"#, "$.faults[0].action.goAway.code"),
        (#"{"faults": [{"action": {"goAway": {"lastStreamID": "later"}}}]}"#, "$.faults[0].action.goAway.lastStreamID"),
        (#"{"faults": [{"action": {"latency": {"ms": -1}}}]}"#, "$.faults[0].action.latency.ms"),
        (#"{"faults": [{"action": {"status": {"reason": "X", "status": 999}}}]}"#, "$.faults[0].action.status.status"),
        (#"{"faults": [{"action": {"tcpReset": {}}, "times": 0}]}"#, "$.faults[0].times"),
    ])
    func badFaultsFile(json: String, path: String) {
        do {
            _ = try MockFaultScript.parse(json: Array(json.utf8))
            Issue.record("no error")
        } catch {
            #expect(error == .badFaultsFile(""))
            #expect(error.detail.hasPrefix(path), "\(error.detail)")
        }
    }

    @Test func garbageFilesNeverCrash() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,0123456789abcdefnulltrue -."#.utf8)
        for _ in 0..<300 {
            let bytes = (0..<Int(generator.next() % 80)).map { _ in
                alphabet[Int(generator.next() % UInt64(alphabet.count))]
            }
            _ = try? DeviceTokenRegistry.parse(json: bytes)
            _ = try? MockFaultScript.parse(json: bytes)
        }
    }
}
