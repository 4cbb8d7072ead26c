import Foundation
import Glibc
import RouseAPNs
import RousePush
import RousePushCore
import RouseTestSupport
import Synchronization
import Testing

/// rouse-pushd as operators run it: several credentials in one process, SIGHUP under load, the peer check, an idle
/// service asleep.
@Suite("rouse-pushd in operation", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(5)))
struct PushServiceOperationTests {
    static func push(_ app: String, _ token: String, type: String = "voip") -> PushAPIRequest {
        PushAPIRequest(app: app, token: token, type: .init(rawValue: type))
    }

    @Test("three credentials (two teams' keys, a certificate) in one process, each its own warm pool, one bulk loop")
    func severalCredentials() async throws {
        let fixture = try await PushdFixture()
        let client = fixture.client()
        let outcomes = try client.send([
            Self.push("rouse", PushdFixture.token(1)), Self.push("other", PushdFixture.token(2)),
            Self.push("cert", PushdFixture.token(3)), Self.push("other", PushdFixture.token(4), type: "alert"),
        ]).get()
        #expect(outcomes.map(\.kind) == [.delivered, .delivered, .delivered, .delivered], "\(outcomes.map(\.json))")
        let health = try client.request("GET", "/health")
        #expect(health.status == 200)
        #expect(health.text.contains(#""pools":3"#), "\(health.text)")
        // The other team's key cannot send for com.example.rouse: the mock answers as APNs would, through the pool.
        let wrong = try client.send([
            PushAPIRequest(app: "other", token: PushdFixture.token(5), type: .voip, topic: "com.example.rouse")
        ]).get()
        #expect(
            wrong.first?.reason == "TopicDisallowed" || wrong.first?.reason == "InvalidProviderToken",
            "\(wrong.map(\.json))")
        let metrics = try client.request("GET", "/metrics").text
        #expect(
            metrics.contains(#"rouse_pushd_pushes_total{app="other",type="alert",outcome="delivered"} 1"#), "\(metrics)"
        )
        #expect(metrics.contains(#"rouse_pushd_pushes_total{app="cert",type="voip",outcome="delivered"} 1"#))
        #expect(metrics.contains(#"rouse_pushd_pool_connections{pool="other"}"#))
        #expect(metrics.contains("rouse_pushd_latency_seconds_bucket"))
        // One loop for the API and every pool's bulk connections, so a bulk push and its outcome cross no thread: each
        // pool keeps its VoIP thread, none has a bulk thread of its own (`rouse-sender`), nor the API one of its own.
        let names = ProcessProbe.threads(fixture.pushd.processIdentifier).values.map(\.name).sorted()
        #expect(names.filter { $0 == "rouse-pushd-io" }.count == 1, "\(names)")
        #expect(names.filter { $0 == "rouse-sender-vo" }.count == 3, "\(names)")
        #expect(!names.contains("rouse-sender") && !names.contains("rouse-pushd-api"), "\(names)")
        #expect(try await fixture.stop() == 0)
    }

    @Test("SIGHUP under load: pools change, every push gets one outcome, the mock sees each exactly once")
    func reloadUnderLoad() async throws {
        let fixture = try await PushdFixture()
        let clients = 4
        let perClient = 150
        let results = Mutex<[PushAPIOutcome]>([])
        let errors = Mutex<[String]>([])
        let socket = fixture.socket
        let workers = (0..<clients).map { c in
            Thread.detachedTask {
                let client = PushServiceClient(socketPath: socket)
                for i in 0..<perClient {
                    let token = PushdFixture.token(c * 10_000 + i, tag: "d\(c)")
                    do {
                        let outcome = try client.send([
                            Self.push(i % 2 == 0 ? "rouse" : "other", token, type: "background")
                        ])
                        switch outcome {
                        case .success(let o): results.withLock { $0 += o }
                        case .failure(let e): errors.withLock { $0.append("\(e)") }
                        }
                    } catch {
                        errors.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        // Reload three times while the clients send: the `rouse` app's pool changes size (a new pool; the old one
        // drains), an app comes and goes.
        for round in 0..<3 {
            try await Task.sleep(for: .milliseconds(150))
            var config = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: fixture.configPath)))
                    as? [String: Any])
            var apps = try #require(config["apps"] as? [String: Any])
            var rouse = try #require(apps["rouse"] as? [String: Any])
            rouse["connections"] = round + 2
            apps["rouse"] = rouse
            if round % 2 == 0 { apps["extra"] = apps["other"] } else { apps["extra"] = nil }
            config["apps"] = apps
            try PushdFixture.write(config, to: fixture.configPath)
            fixture.pushd.signal(SIGHUP)
        }
        for worker in workers { await worker.value }
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 }.prefix(3))")
        let outcomes = results.withLock { $0 }
        #expect(outcomes.count == clients * perClient)
        #expect(
            outcomes.allSatisfy { $0.kind == .delivered },
            "\(outcomes.filter { $0.kind != .delivered }.prefix(3).map(\.json))")
        let records = try await fixture.adminGet("/records")
        let array = try #require(try JSONSerialization.jsonObject(with: Data(records.utf8)) as? [[String: Any]])
        var seen: [String: Int] = [:]
        for record in array {
            if let token = record["token"] as? String, record["outcome"] as? String == "accepted" {
                seen[token, default: 0] += 1
            }
        }
        let sent = Set(outcomes.map(\.token))
        #expect(sent.count == clients * perClient)
        #expect(sent.allSatisfy { seen[$0] == 1 }, "a push lost or doubled: \(sent.filter { seen[$0] != 1 }.prefix(3))")
        let metrics = try fixture.client().request("GET", "/metrics").text
        #expect(metrics.contains(#"rouse_pushd_reloads_total{result="ok"} 3"#), "\(metrics)")
        #expect(try await fixture.stop() == 0)
    }

    @Test("h2c with prior knowledge on the TCP listener: the bearer token, several pushes on one connection")
    func h2c() async throws {
        let fixture = try await PushdFixture()
        let address = try #require(fixture.h2cAddress)
        let urls = (1...3).map { "http://\(address)/v1/apps/rouse/voip/\(PushdFixture.token($0))" }
        // nghttp (nghttp2's client) sends the three on one connection (curl 7.88 does not reuse an h2c connection
        // for a second POST with prior knowledge).
        try "{\"aps\":{}}".write(toFile: "\(fixture.directory)/payload.json", atomically: true, encoding: .utf8)
        try ChildProcess.require("/usr/bin/nghttp")
        let out = try await ChildProcess.run(
            "/usr/bin/nghttp",
            ["-v", "-H", "authorization: Bearer \(fixture.bearer)", "-d", "\(fixture.directory)/payload.json"] + urls)
        let answered = out.stdout.split(separator: "\n").filter { $0.contains(":status: 200") }
        #expect(answered.count == 3, "\(out.stdout.suffix(2000))")
        #expect(out.stdout.components(separatedBy: #""outcome":"delivered""#).count == 4)
        #expect(out.stdout.components(separatedBy: "Connected").count == 2, "one connection for the three")
        let denied = try await ChildProcess.run(
            "/usr/bin/curl",
            ["-s", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-d", "{}", urls[0]])
        #expect(denied.stdout == "401")
        #expect(try await fixture.stop() == 0)
    }

    @Test("the Unix socket's peer check: a uid outside the allowed list gets 403, an allowed group gets in")
    func peerCredentials() async throws {
        try ChildProcess.require("/usr/bin/setpriv")
        try ChildProcess.require("/usr/bin/curl")
        let fixture = try await PushdFixture { config in
            config["unix"] = ["path": "", "mode": "0666", "allowUIDs": [4242], "allowGIDs": [4343]]
        }
        func curlAs(uid: Int, gid: Int) async throws -> String {
            try await ChildProcess.run(
                "/usr/bin/setpriv",
                [
                    "--reuid", "\(uid)", "--regid", "\(gid)", "--clear-groups", "/usr/bin/curl", "-s", "-o",
                    "/dev/null",
                    "-w", "%{http_code}", "--unix-socket", fixture.socket, "http://localhost/health",
                ]
            ).stdout
        }
        #expect(try await curlAs(uid: 65534, gid: 65534) == "403")
        #expect(try await curlAs(uid: 4242, gid: 65534) == "200")
        #expect(try await curlAs(uid: 65534, gid: 4343) == "200")
        let metrics = try fixture.client().request("GET", "/metrics").text
        #expect(metrics.contains(#"rouse_pushd_limit_hits_total{limit="peer"} 1"#), "\(metrics)")
        #expect(try await fixture.stop() == 0)
    }

    @Test("an idle service with warm connections sleeps: 0 wake-ups in 10 s")
    func idleWakeUps() async throws {
        let fixture = try await PushdFixture()
        let client = fixture.client()
        let outcomes = try client.send([
            Self.push("rouse", PushdFixture.token(1)), Self.push("rouse", PushdFixture.token(2), type: "background"),
        ]).get()
        #expect(outcomes.allSatisfy { $0.kind == .delivered })
        let pid = fixture.pushd.processIdentifier
        let quiet = try await ProcessProbe.settle(pid, quiet: .seconds(2), limit: .seconds(20))
        #expect(quiet, "rouse-pushd never went quiet")
        let wakeUps = try await ProcessProbe.wakeUps(pid, over: .seconds(10), voluntaryOnly: true)
        #expect(
            wakeUps == 0,
            "\(wakeUps) wake-ups in 10 s: \(ProcessProbe.threads(pid).values.map { "\($0.name)=\($0.voluntary)" })")
        // Still warm: the next push goes out on the kept connections.
        let again = try client.send([Self.push("rouse", PushdFixture.token(3))]).get()
        #expect(again.first?.kind == .delivered)
        let metrics = try client.request("GET", "/metrics").text
        #expect(metrics.contains(#"rouse_pushd_pool_connections{pool="rouse"} 2"#), "\(metrics)")
        #expect(try await fixture.stop() == 0)
    }
}

extension Thread {
    /// Runs blocking `body` on a thread of its own; the task ends when it returns.
    static func detachedTask(_ body: @escaping @Sendable () -> Void) -> Task<Void, Never> {
        Task {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    body()
                    c.resume()
                }
            }
        }
    }
}
