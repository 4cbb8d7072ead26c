import Foundation
import Glibc
import RousePush
import RousePushCore
import RouseSystem
import RouseTestSupport
import Testing

/// The API's answers to what it does not take, and the OpenAPI document checked against the server.
@Suite("rouse-pushd API errors and its OpenAPI document", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(5)))
struct PushAPIErrorTests {
    static func request(_ method: String, _ path: String, _ body: String = "", headers: String = "") -> [UInt8] {
        Array(
            "\(method) \(path) HTTP/1.1\r\nHost: x\r\n\(headers)Content-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }

    /// Requests and the status and message each must get.
    static func table(_ fixture: PushdFixture) -> [(name: String, bytes: [UInt8], status: Int, message: String)] {
        let token = PushdFixture.token(7)
        return [
            ("garbage", Array("\u{16}\u{03}\u{01}\r\n\r\n".utf8), 400, "request line must be"),
            ("bare LF", Array("GET /health HTTP/1.1\nHost: x\n\n".utf8), 400, "bare LF"),
            ("HTTP/2.0 line", Array("GET /health HTTP/2.0\r\nHost: x\r\n\r\n".utf8), 505, "not supported"),
            ("no Host", Array("GET /health HTTP/1.1\r\n\r\n".utf8), 400, "without Host"),
            (
                "gzip upload",
                Array("POST /v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".utf8), 501,
                "'gzip' is not supported"
            ),
            ("folded header", Array("GET /health HTTP/1.1\r\nHost: x\r\n  folded\r\n\r\n".utf8), 400, "folding"),
            (
                "bad length", Array("POST /v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 1e3\r\n\r\n".utf8), 400,
                "not a decimal"
            ),
            (
                "too big", Array("POST /v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n".utf8), 413,
                "exceeds"
            ),
            (
                "huge head",
                Array(
                    ("GET /health HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 20000) + "\r\n\r\n").utf8),
                431, "exceed"
            ),
            ("unknown path", request("GET", "/v2/push"), 404, "no such path"),
            ("wrong method", request("GET", "/v1/push"), 405, "takes POST"),
            ("fast path GET", request("GET", "/v1/apps/rouse/voip/\(token)"), 405, "takes POST"),
            ("not JSON", request("POST", "/v1/push", "{nope"), 400, "not valid JSON"),
            ("empty body", request("POST", "/v1/push"), 400, "empty body"),
            (
                "unknown field", request("POST", "/v1/push", #"{"app":"rouse","token":"ab","type":"voip","colour":1}"#),
                400, "unknown field 'colour'"
            ),
            ("missing type", request("POST", "/v1/push", #"{"app":"rouse","token":"ab"}"#), 400, "missing 'type'"),
            (
                "bad type", request("POST", "/v1/push", #"{"app":"rouse","token":"ab","type":"fax"}"#), 400,
                "unknown push type"
            ),
            (
                "no app", request("POST", "/v1/push", #"{"app":"nope","token":"ab","type":"voip"}"#), 404,
                "no app named 'nope'"
            ),
            (
                "ambiguous topic",
                request("POST", "/v1/push", #"{"topic":"com.example.rouse","token":"ab","type":"voip"}"#), 404,
                "no app for topic"
            ),
            ("fast path no app", request("POST", "/v1/apps/nope/voip/\(token)"), 404, "no app named"),
            ("fast path bad type", request("POST", "/v1/apps/rouse/fax/\(token)"), 404, "unknown push type"),
            ("batch not array", request("POST", "/v1/batch", #"{"pushes":3}"#), 400, "must be an array"),
            ("batch empty", request("POST", "/v1/batch", #"{"pushes":[]}"#), 400, "is empty"),
            (
                "batch too big",
                request(
                    "POST", "/v1/batch",
                    "{\"pushes\":["
                        + Array(repeating: #"{"app":"rouse","token":"ab","type":"voip"}"#, count: 6).joined(
                            separator: ",") + "]}"), 413, "exceeds 5"
            ),
            (
                "batch element",
                request("POST", "/v1/batch", #"{"pushes":[{"app":"rouse","token":"ab","type":"voip"},7]}"#), 400,
                "'pushes[1]' is not an object"
            ),
        ]
    }

    static func config(_ config: inout [String: Any]) {
        config["limits"] = ["maxBatch": 5, "maxBodyBytes": 65536, "maxPendingPushes": 3]
        var apps = config["apps"] as? [String: Any] ?? [:]
        var limited = apps["other"] as? [String: Any] ?? [:]
        limited["ratePerSecond"] = 0.01
        limited["burst"] = 1
        apps["limited"] = limited
        config["apps"] = apps
    }

    @Test("every malformed or refused request gets its exact status and message")
    func errors() async throws {
        let fixture = try await PushdFixture(edit: Self.config)
        for (name, bytes, status, message) in Self.table(fixture) {
            let answer = try RawSocket.exchange(path: fixture.socket, bytes)
            #expect(RawSocket.status(answer) == status, "\(name): \(answer)")
            #expect(answer.contains(message), "\(name): \(answer)")
        }
        // The per-app rate limit: one push per 100 s, burst 1.
        let client = fixture.client()
        let first = try client.request("POST", "/v1/apps/limited/voip/\(PushdFixture.token(8))")
        #expect(first.status == 200, "\(first.text)")
        let second = try client.request("POST", "/v1/apps/limited/voip/\(PushdFixture.token(9))")
        #expect(second.status == 429)
        #expect(second.headers["retry-after"] != nil)
        // After garbage, the service still serves.
        #expect(try client.request("GET", "/health").status == 200)
        let metrics = try client.request("GET", "/metrics").text
        #expect(metrics.contains(#"rouse_pushd_limit_hits_total{limit="rate"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"rouse_pushd_limit_hits_total{limit="body_size"} 1"#))
        #expect(try await fixture.stop() == 0)
    }

    @Test("pipelined requests and Expect: 100-continue on one connection")
    func pipelining() async throws {
        let fixture = try await PushdFixture()
        let both = Self.request("GET", "/health") + Self.request("GET", "/health")
        let fd = try RouseSystem.Sys.connect(unixPath: fixture.socket)
        defer { RouseSystem.Sys.close(fd) }
        try RouseSystem.Sys.setReceiveTimeout(fd, seconds: 10)
        try RouseSystem.Sys.sendAll(fd, both)
        var text = ""
        var chunk = [UInt8](repeating: 0, count: 4096)
        while text.components(separatedBy: "HTTP/1.1 200").count < 3 {
            let n = try chunk.withUnsafeMutableBytes { try RouseSystem.Sys.read(fd, into: $0) }
            if n == 0 { break }
            text += String(decoding: chunk[0..<n], as: UTF8.self)
        }
        #expect(text.components(separatedBy: "HTTP/1.1 200").count == 3, "\(text)")
        let body = #"{"app":"rouse","token":"\#(PushdFixture.token(3))","type":"voip"}"#
        let answer = try RawSocket.exchange(
            path: fixture.socket, Self.request("POST", "/v1/push", body, headers: "Expect: 100-continue\r\n"))
        #expect(answer.hasPrefix("HTTP/1.1 100 Continue") || answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        #expect(answer.contains(#""outcome":"delivered""#))
        #expect(try await fixture.stop() == 0)
    }

    /// `(method, path template, status)` triples of docs/push-api.yaml, read line by line (the document's own
    /// layout: paths at two spaces, methods at four, statuses at eight).
    static func documented() throws -> Set<String> {
        let text = try String(contentsOfFile: Repository.root + "/docs/push-api.yaml", encoding: .utf8)
        var triples: Set<String> = []
        var inPaths = false
        var path = ""
        var method = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("paths:") { inPaths = true; continue }
            if inPaths && !line.hasPrefix(" ") && !line.isEmpty { inPaths = false }
            guard inPaths else { continue }
            if line.hasPrefix("  /") { path = String(line.dropFirst(2).dropLast()) }
            if line.hasPrefix("    ") && !line.hasPrefix("     "),
                let m = ["get:", "post:"].first(where: { line.dropFirst(4).hasPrefix($0) })
            {
                method = m.dropLast().uppercased()
            }
            if line.hasPrefix("        \""), let status = Int(line.dropFirst(9).prefix(3)) {
                triples.insert("\(method) \(path) \(status)")
            }
        }
        return triples
    }

    @Test("docs/push-api.yaml: every documented path, method and status is served, every route is documented")
    func openAPIDocument() async throws {
        let documented = try Self.documented()
        let routes = Set(documented.map { $0.split(separator: " ").prefix(2).joined(separator: " ") })
        #expect(routes == Set(PushAPIRoute.templates.map { "\($0.method) \($0.path)" }), "\(routes)")
        // An endpoint that takes TCP connections and never answers (nobody accepts): pushes to it wait out their
        // deadline, failed with processed: no.
        let silent = try RouseSystem.Sys.socket(family: AF_INET, type: Int32(SOCK_STREAM.rawValue))
        defer { RouseSystem.Sys.close(silent) }
        let loopback = try RouseSystem.SocketAddress(parsing: "127.0.0.1:0")
        try RouseSystem.Sys.bind(silent, loopback)
        try RouseSystem.Sys.listen(silent, backlog: 16)
        let silentPort = try RouseSystem.Sys.localAddress(silent).port
        let fixture = try await PushdFixture { config in
            Self.config(&config)
            var limits = config["limits"] as? [String: Any] ?? [:]
            limits["maxBodyBytes"] = 8192
            config["limits"] = limits
            var apps = config["apps"] as? [String: Any] ?? [:]
            var dead = apps["rouse"] as? [String: Any] ?? [:]
            dead["endpoint"] = "https://127.0.0.1:\(silentPort)"
            dead["deadlineMs"] = 500
            dead["pruneFile"] = nil
            apps["dead"] = dead
            config["apps"] = apps
        }
        let token = PushdFixture.token(11)
        let push = #"{"app":"rouse","token":"\#(token)","type":"voip"}"#
        let examples: [(String, String, [UInt8])] = [
            ("POST /v1/push 200", "", Self.request("POST", "/v1/push", push)),
            ("POST /v1/push 400", "", Self.request("POST", "/v1/push", "[]")),
            ("POST /v1/push 404", "", Self.request("POST", "/v1/push", #"{"app":"x","token":"ab","type":"voip"}"#)),
            ("POST /v1/push 413", "", Self.request("POST", "/v1/push", String(repeating: " ", count: 9000))),
            ("POST /v1/push 422", "", Self.request("POST", "/v1/push", #"{"app":"rouse","token":"zz","type":"voip"}"#)),
            (
                "POST /v1/push 200", "",
                Self.request("POST", "/v1/push", #"{"app":"limited","token":"\#(token)","type":"voip"}"#)
            ),
            (
                "POST /v1/push 429", "",
                Self.request("POST", "/v1/push", #"{"app":"limited","token":"\#(token)","type":"voip"}"#)
            ),
            (
                "POST /v1/push 502", "",
                Self.request("POST", "/v1/push", #"{"app":"dead","token":"\#(token)","type":"voip","deadlineMs":300}"#)
            ),
            ("POST /v1/batch 200", "", Self.request("POST", "/v1/batch", "{\"pushes\":[\(push)]}")),
            ("POST /v1/batch 400", "", Self.request("POST", "/v1/batch", "{}")),
            (
                "POST /v1/batch 404", "",
                Self.request("POST", "/v1/batch", #"{"pushes":[{"app":"x","token":"ab","type":"voip"}]}"#)
            ),
            (
                "POST /v1/batch 413", "",
                Self.request(
                    "POST", "/v1/batch",
                    "{\"pushes\":[" + Array(repeating: push, count: 6).joined(separator: ",") + "]}")
            ),
            (
                "POST /v1/batch 429", "",
                Self.request("POST", "/v1/batch", #"{"pushes":[{"app":"limited","token":"ab","type":"voip"}]}"#)
            ),
            ("POST /v1/apps/{app}/{type}/{token} 200", "", Self.request("POST", "/v1/apps/rouse/voip/\(token)")),
            ("POST /v1/apps/{app}/{type}/{token} 404", "", Self.request("POST", "/v1/apps/x/voip/\(token)")),
            ("POST /v1/apps/{app}/{type}/{token} 405", "", Self.request("GET", "/v1/apps/rouse/voip/\(token)")),
            ("POST /v1/apps/{app}/{type}/{token} 422", "", Self.request("POST", "/v1/apps/rouse/voip/zz")),
            ("POST /v1/apps/{app}/{type}/{token} 502", "", Self.request("POST", "/v1/apps/dead/voip/\(token)")),
            ("GET /health 200", "", Self.request("GET", "/health")),
            ("GET /metrics 200", "", Self.request("GET", "/metrics")),
        ]
        var served: Set<String> = []
        for (expected, _, bytes) in examples {
            let answer = try RawSocket.exchange(path: fixture.socket, bytes)
            let status = try #require(RawSocket.status(answer))
            let triple = expected.split(separator: " ").prefix(2).joined(separator: " ") + " \(status)"
            #expect(triple == expected, "\(answer.prefix(300))")
            #expect(documented.contains(triple), "\(triple) is served but not documented")
            served.insert(triple)
        }
        // 401 and 503 need their own set-ups: the TCP listener without a token; the pending budget full.
        let address = try #require(fixture.tcpAddress)
        let unauthorized = try await ChildProcess.run(
            "/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-d", push, "http://\(address)/v1/push"])
        if unauthorized.stdout == "401" { served.insert("POST /v1/push 401") }
        let authorized = try await ChildProcess.run(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(fixture.bearer)", "-d",
                push, "http://\(address)/v1/push",
            ])
        #expect(authorized.stdout == "200")
        let slow = (0..<4).map { _ in
            Thread.detachedTask {
                _ = try? RawSocket.exchange(
                    path: fixture.socket,
                    Self.request(
                        "POST", "/v1/push", #"{"app":"dead","token":"\#(token)","type":"voip","deadlineMs":1500}"#))
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        let full = try RawSocket.exchange(path: fixture.socket, Self.request("POST", "/v1/push", push))
        if RawSocket.status(full) == 503 { served.insert("POST /v1/push 503") }
        for task in slow { await task.value }
        #expect(served == documented, "documented but not served: \(documented.subtracting(served))")
        #expect(try await fixture.stop() == 0)
    }
}
