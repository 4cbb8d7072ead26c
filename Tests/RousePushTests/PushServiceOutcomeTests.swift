import Foundation
import RouseAPNs
import RousePush
import RousePushCore
import RouseTestSupport
import Testing

/// rouse-pushd gives exactly the outcomes `rouse send` gives for the same pushes: delivered, each rejection (by the
/// mock, by the pre-flight), and the failures and retries across the mock's faults. `rouse send --via` is the client.
@Suite("rouse-pushd outcomes equal rouse send's", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(5)))
struct PushServiceOutcomeTests {
    /// The fields that make an outcome (latency and generated ids differ by nature).
    static func essence(_ line: String) throws -> [String: String] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        var kept: [String: String] = [:]
        for key in ["outcome", "reason", "timestamp", "preflight", "processed", "retries", "token"] {
            if let value = object[key] { kept[key] = "\(value)" }
        }
        if let error = object["error"] as? String { kept["errorKind"] = String(error.prefix { $0 != ":" }) }
        return kept
    }

    static func run(_ arguments: [String]) async throws -> (line: String, status: Int32) {
        let out = try await ChildProcess.run(try Products.path("rouse"), arguments, timeout: .seconds(60))
        let line =
            out.stdout.split(separator: "\n").first.map(String.init) ?? "{\"stderr\":\(JSONText.quoted(out.stderr))}"
        return (line, out.status)
    }

    @Test("delivered and every rejection: direct rouse send, rouse send --via and the service agree")
    func rejections() async throws {
        let fixture = try await PushdFixture()
        let big = "{\"aps\":{},\"pad\":\"" + String(repeating: "x", count: 6000) + "\"}"
        let cases: [(String, [String])] = [
            ("delivered voip", ["voip", "--token", PushdFixture.token(1)]),
            ("Unregistered", ["background", "--token", PushdFixture.goneToken]),
            ("ExpiredToken", ["alert", "--token", PushdFixture.expiredToken]),
            ("DeviceTokenNotForTopic", ["alert", "--token", PushdFixture.voipOnlyToken]),
            ("BadDeviceToken pre-flight", ["voip", "--token", "zz12"]),
            ("PayloadTooLarge pre-flight", ["voip", "--token", PushdFixture.token(2), "--payload", big]),
            ("BadPriority", ["background", "--token", PushdFixture.token(3), "--priority", "10"]),
            (
                "BadCollapseId",
                ["alert", "--token", PushdFixture.token(4), "--collapse-id", String(repeating: "c", count: 65)]
            ),
        ]
        for (name, push) in cases {
            let common = push + ["--topic", PushdFixture.bundle, "--json", "--quiet"]
            let direct = try await Self.run(["send"] + common + fixture.directArguments)
            #expect(!direct.line.isEmpty, "\(name): rouse send printed nothing")
            let via = try await Self.run(["send"] + common + ["--via", fixture.socket, "--app", "rouse"])
            #expect(try Self.essence(direct.line) == Self.essence(via.line), "\(name): \(direct.line) vs \(via.line)")
            #expect(direct.status == via.status, "\(name): exit status")
        }
        let prune = try String(contentsOfFile: "\(fixture.directory)/rouse.prune", encoding: .utf8)
        // Every token APNs (or the pre-flight) called invalid, in rouse send's prune format.
        let expected: Set<String> = [
            "\(PushdFixture.goneToken)\tUnregistered\t\(PushdFixture.goneSince)",
            "\(PushdFixture.expiredToken)\tExpiredToken\t", "\(PushdFixture.voipOnlyToken)\tDeviceTokenNotForTopic\t",
            "zz12\tBadDeviceToken\t",
        ]
        #expect(Set(prune.split(separator: "\n").map(String.init)) == expected, "\(prune)")
        #expect(try await fixture.stop() == 0)
    }

    @Test("failures and retries across the mock's faults: REFUSED_STREAM, GOAWAY, TCP reset, 503 burst")
    func faults() async throws {
        // One rule per fault and client: tokens tagged c1…c4, n=1 for the direct send, n=2 through the service.
        var rules: [String] = []
        let actions = [
            ("c1", #"{"refusedStream":{}}"#), ("c2", #"{"goAway":{"lastStreamID":0,"reason":"Shutdown"}}"#),
            ("c3", #"{"tcpReset":{}}"#), ("c4", #"{"status":{"status":503,"reason":"ServiceUnavailable","count":2}}"#),
        ]
        for (tag, action) in actions {
            for n in 1...2 {
                rules.append(
                    #"{"match":{"token":"\#(PushdFixture.token(n, tag: tag))"},"action":\#(action),"times":1}"#)
            }
        }
        let fixture = try await PushdFixture(faults: "{\"faults\":[" + rules.joined(separator: ",") + "]}")
        for (tag, _) in actions {
            let common = ["voip", "--topic", PushdFixture.bundle, "--json", "--quiet", "--deadline", "10"]
            let direct = try await Self.run(
                ["send", "--token", PushdFixture.token(1, tag: tag)] + common + fixture.directArguments)
            let via = try await Self.run(
                ["send", "--token", PushdFixture.token(2, tag: tag)] + common + [
                    "--via", fixture.socket, "--app", "rouse",
                ])
            var a = try Self.essence(direct.line)
            var b = try Self.essence(via.line)
            a["token"] = nil
            b["token"] = nil
            #expect(a == b, "\(tag): \(direct.line) vs \(via.line)")
            #expect(!a.isEmpty)
        }
        #expect(try await fixture.stop() == 0)
    }
}
