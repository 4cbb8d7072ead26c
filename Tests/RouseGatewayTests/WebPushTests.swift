import Foundation
import Glibc
import RouseCurl
import RouseGateway
import RouseTestSupport
import RouseWire
import Testing

/// WebPush ingest end to end (docs/webpush.md): pywebpush as the application server (VAPID + aes128gcm over
/// requests: HTTP/1.1) against the gateway's WebPush listener, a test device on the device channel with the
/// `webpush` feature, http_ece decrypting what the device received; curl for HTTP/2 and for the raw error cases.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct WebPushTests {
    /// A port free now (the origin names it, so it must be known before the gateway starts).
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket: \(errno)") }
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw FixtureError("bind: \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    struct Setup {
        let harness: Harness
        let origin: String
        let python: String
        let state: String
        let directory: TemporaryDirectory

        static func start(burst: Double = 1000, perApp: Int = 8, requestTimeout: Int = 10) async throws -> Setup {
            let port = try freePort()
            let origin = "https://localhost:\(port)"
            let harness = try await Harness.start(configure: {
                var webPush = WebPushConfiguration(
                    listener: .init(
                        listen: "127.0.0.1:\(port)", certificateFile: Repository.cert("server.pem"),
                        privateKeyFile: Repository.cert("server.key")),
                    origin: origin)
                webPush.burst = burst
                webPush.maxSubscriptionsPerApp = perApp
                $0.limits.requestTimeoutSeconds = requestTimeout
                webPush.messagesPerSecond = 0.01
                $0.webPush = webPush
            })
            let python = try await APNsClientLibraries.python()
            let directory = try TemporaryDirectory()
            let state = directory.path + "/ua.json"
            _ = try await run(python, ["keys", state])
            return Setup(harness: harness, origin: origin, python: python, state: state, directory: directory)
        }

        /// Runs the app script; its last stdout line.
        @discardableResult
        static func run(_ python: String, _ arguments: [String]) async throws -> String {
            let out = try await ChildProcess.run(
                python, [Repository.root + "/Tests/Interop/webpush_app.py"] + arguments, timeout: .seconds(60))
            guard out.status == 0, let line = out.stdout.split(separator: "\n").last else {
                throw FixtureError("webpush_app.py \(arguments.first ?? ""): exit \(out.status) \(out.stderr)")
            }
            return String(line)
        }

        var vapidPublic: String {
            get throws {
                let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: state)))
                return (object as? [String: Any])?["vapid_public"] as? String ?? ""
            }
        }

        /// `POST /device/v1/webpush`; the subscription's JSON.
        func subscribe(app: String, token: String, vapid: String?) async throws -> [String: Any] {
            var body: [String: Any] = ["app": app, "token": token]
            if let vapid { body["vapid"] = vapid }
            let text = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            let (status, json) = try await harness.device.call("POST", "/device/v1/webpush", body: text)
            guard status == 201 || status == 200 else { throw FixtureError("subscribe: \(status) \(json)") }
            return json
        }

        /// Opens the device channel declaring `webpush` and `urgency`; reads the hello.
        func channel(urgency: String? = nil) async throws -> Channel {
            var request = harness.device.request("GET", "/device/v1/channel", timeout: .seconds(120))
            request.headers.append((name: "rouse-features", value: "webpush"))
            if let urgency { request.headers.append((name: "urgency", value: urgency)) }
            let response = try await harness.curl.stream(request)
            guard response.head.status == 200 else { throw FixtureError("channel: \(response.head.status)") }
            let channel = Channel(response.body)
            let hello = try await channel.next()
            guard hello.type == "hello" else { throw FixtureError("expected hello, got \(hello)") }
            return channel
        }

        /// pywebpush sends `size` seeded bytes; the answer (`status`, `headers`, `plaintext`).
        func send(_ endpoint: String, size: Int, seed: Int, _ options: [String] = []) async throws -> [String: Any] {
            let line = try await Self.run(
                python, ["send", state, endpoint, Repository.cert("ca.pem"), String(size), String(seed)] + options)
            return try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
        }

        /// The next record must be a `webpush` one; returns it with its body decrypted (base64).
        func receive(_ channel: Channel) async throws -> (record: ChannelRecord.WebPush, plaintext: String) {
            let event = try await channel.next()
            guard let record = event.webPush else { throw FixtureError("expected a webpush record, got \(event)") }
            return (record, try await Self.run(python, ["decrypt", state, record.payload]))
        }

        /// curl (HTTP/1.1 or HTTP/2) POSTs `body` to `path`; status, HTTP version and response headers.
        func curl(
            _ path: String, http2: Bool = false, method: String = "POST", headers: [String] = [], body: String = "x"
        ) async throws -> (status: Int, version: String, headers: String, body: String) {
            let headerFile = directory.path + "/headers-\(UUID().uuidString)"
            var arguments = [
                "-s", "-o", "-", "-D", headerFile, "-w", "\n%{http_code} %{http_version}", "--cacert",
                Repository.cert("ca.pem"), http2 ? "--http2" : "--http1.1", "-X", method,
            ]
            for header in headers { arguments += ["-H", header] }
            if method == "POST" { arguments += ["--data-binary", body] }
            arguments.append(origin + path)
            let out = try await ChildProcess.run("/usr/bin/curl", arguments, timeout: .seconds(30))
            let lines = out.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let last = lines.last.map(String.init) ?? ""
            let parts = last.split(separator: " ")
            let responseHeaders = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
            return (
                Int(parts.first ?? "") ?? 0, parts.count > 1 ? String(parts[1]) : "", responseHeaders.lowercased(),
                lines.dropLast().joined(separator: "\n")
            )
        }

        func stop() async { await harness.stop() }

        /// Runs `body` with `setup`, then stops its gateway, whether `body` threw or not.
        static func with(_ setup: Setup, _ body: (Setup) async throws -> Void) async throws {
            do {
                try await body(setup)
            } catch {
                await setup.stop()
                throw error
            }
            await setup.stop()
        }
    }

    @Test func pywebpushMessagesReachTheDeviceByteEqual() async throws {
        try await Setup.with(try await Setup.start()) { setup in
            let subscription = try await setup.subscribe(
                app: "org.example.app", token: "reg-1", vapid: try setup.vapidPublic)
            let endpoint = try #require(subscription["endpoint"] as? String)
            let id = try #require(subscription["id"] as? String)
            #expect(endpoint == "\(setup.origin)/wp/\(id)")
            #expect(id.utf8.count == 43)
            let again = try await setup.subscribe(app: "org.example.app", token: "reg-1", vapid: try setup.vapidPublic)
            #expect(again["id"] as? String == id, "the same registration keeps its endpoint")
            let list = try await setup.harness.device.call("GET", "/device/v1/webpush")
            #expect((list.json["subscriptions"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])

            let channel = try await setup.channel()
            // 1 and 3993 bytes (3993 + 16 tag + 1 delimiter + 86 header = 4096) are delivered; 3994 is 413.
            for (size, seed) in [(1, 1), (3993, 2)] {
                let answer = try await setup.send(endpoint, size: size, seed: seed)
                #expect(answer["status"] as? Int == 201, "\(size) bytes: \(answer)")
                let headers = answer["headers"] as? [String: String] ?? [:]
                #expect(headers["ttl"] == "60")
                #expect(headers["location"]?.hasPrefix("\(setup.origin)/m/") == true)
                let (record, plaintext) = try await setup.receive(channel)
                #expect(plaintext == answer["plaintext"] as? String, "\(size) bytes decrypt byte-equal")
                #expect(record.subscription == id)
                #expect(record.urgency == .normal)
                try await setup.harness.device.ack([record.id])
            }
            let tooLarge = try await setup.send(endpoint, size: 3994, seed: 3)
            #expect(tooLarge["status"] as? Int == 413)

            // Offline: TTL 0 is dropped, TTL 60 is kept for the reconnect; a Topic replaces the pending message.
            channel.close()
            try await Task.sleep(for: .milliseconds(300))  // the gateway sees the stream end (no event to wait on here)
            #expect(try await setup.send(endpoint, size: 10, seed: 10, ["--ttl", "0"])["status"] as? Int == 201)
            let kept = try await setup.send(endpoint, size: 11, seed: 11, ["--ttl", "60"])
            _ = try await setup.send(endpoint, size: 12, seed: 12, ["--topic", "score"])
            let newest = try await setup.send(endpoint, size: 13, seed: 13, ["--topic", "score"])
            let back = try await setup.channel()
            let first = try await setup.receive(back)
            #expect(first.plaintext == kept["plaintext"] as? String, "TTL 60 kept offline, TTL 0 dropped")
            let second = try await setup.receive(back)
            #expect(second.plaintext == newest["plaintext"] as? String, "the Topic's newer message replaced the older")
            #expect(second.record.topic == "score")
            try await back.expectNoPush(within: .milliseconds(500))
            try await setup.harness.device.ack([first.record.id, second.record.id])
            back.close()

            // Urgency: very-low is withheld from a channel whose minimum is normal until the minimum drops.
            let urgent = try await setup.channel(urgency: "normal")
            let low = try await setup.send(endpoint, size: 20, seed: 20, ["--urgency", "very-low"])
            #expect(low["status"] as? Int == 201)
            try await urgent.expectNoPush(within: .milliseconds(700))
            let high = try await setup.send(endpoint, size: 21, seed: 21, ["--urgency", "high"])
            #expect(try await setup.receive(urgent).plaintext == high["plaintext"] as? String)
            let lowered = try await setup.harness.device.call(
                "POST", "/device/v1/urgency", body: #"{"urgency":"very-low"}"#)
            #expect(lowered.status == 200)
            let withheld = try await setup.receive(urgent)
            #expect(withheld.plaintext == low["plaintext"] as? String)
            #expect(withheld.record.urgency == .veryLow)
            urgent.close()
        }
    }

    @Test func everyErrorCodeMatrixAndHTTP2() async throws {
        try await Setup.with(try await Setup.start(burst: 3)) { setup in
            let restricted = try await setup.subscribe(app: "org.example.a", token: "r", vapid: try setup.vapidPublic)
            let endpoint = try #require(restricted["endpoint"] as? String)
            let open = try await setup.subscribe(app: "org.example.b", token: "o", vapid: nil)
            let openID = try #require(open["id"] as? String)
            let path = "/wp/\(openID)"

            // HTTP/2 and HTTP/1.1 both take a message: 201 + Location + TTL.
            let h2 = try await setup.curl(path, http2: true, headers: ["TTL: 30"])
            #expect(h2.status == 201 && h2.version == "2", "\(h2)")
            #expect(h2.headers.contains("ttl: 30") && h2.headers.contains("location: \(setup.origin)/m/"))
            let h1 = try await setup.curl(path, headers: ["TTL: 30"])
            #expect(h1.status == 201 && h1.version == "1.1", "\(h1)")

            // 400: bad Urgency, a 33-character Topic, a Topic outside base64url, no TTL, aesgcm.
            for headers in [
                ["TTL: 30", "Urgency: urgent"], ["TTL: 30", "Topic: \(String(repeating: "a", count: 33))"],
                ["TTL: 30", "Topic: a b"], [], ["TTL: 30", "Content-Encoding: aesgcm"],
            ] {
                #expect(try await setup.curl(path, headers: headers).status == 400, "\(headers)")
            }
            // 404: unknown; 413 only above 4096 bytes.
            #expect(try await setup.curl("/wp/" + String(repeating: "A", count: 43), headers: ["TTL: 1"]).status == 404)
            #expect(
                try await setup.curl(path, headers: ["TTL: 1"], body: String(repeating: "b", count: 4096)).status == 201
            )
            #expect(
                try await setup.curl(path, http2: true, headers: ["TTL: 1"], body: String(repeating: "b", count: 4097))
                    .status == 413)
            #expect(
                try await setup.curl(path, headers: ["TTL: 1"], body: String(repeating: "b", count: 4097)).status == 413
            )
            // 401 without VAPID, 403 with another key; pywebpush with the right key: 201.
            #expect(try await setup.send(endpoint, size: 5, seed: 5, ["--no-vapid"])["status"] as? Int == 401)
            let other = setup.directory.path + "/other.json"
            try await Setup.run(setup.python, ["keys", other])
            let stranger = Setup(
                harness: setup.harness, origin: setup.origin, python: setup.python, state: other,
                directory: setup.directory
            )
            #expect(try await stranger.send(endpoint, size: 5, seed: 5)["status"] as? Int == 403)
            #expect(try await setup.send(endpoint, size: 5, seed: 5)["status"] as? Int == 201)
            // 429 with Retry-After once the burst (3) is spent.
            var limited: (status: Int, version: String, headers: String, body: String)?
            for _ in 0..<4 {
                let answer = try await setup.curl(path, headers: ["TTL: 1"])
                if answer.status == 429 { limited = answer }
            }
            #expect(limited?.headers.contains("retry-after: ") == true, "\(String(describing: limited))")
            // 410 after the device deleted the subscription.
            let restrictedID = try #require(restricted["id"] as? String)
            #expect(try await setup.harness.device.call("DELETE", "/device/v1/webpush/\(restrictedID)").status == 200)
            #expect(try await setup.send(endpoint, size: 5, seed: 6)["status"] as? Int == 410)

            // Matrix push gateway: discovery, and a Synapse-shaped notify.
            let discovery = try await setup.curl("/_matrix/push/v1/notify", method: "GET")
            #expect(discovery.status == 200 && discovery.body == #"{"unifiedpush":{"gateway":"matrix"}}"#)
            let third = try await setup.subscribe(app: "org.example.c", token: "m", vapid: nil)
            let pushkey = try #require(third["endpoint"] as? String)
            let notify = """
                {"notification":{"event_id":"$ev1","room_id":"!r:example.org","type":"m.room.message",
                "sender":"@a:example.org","counts":{"unread":1},"prio":"high",
                "devices":[{"app_id":"org.example.c","pushkey":"\(pushkey)","pushkey_ts":1,"data":{}},
                {"app_id":"x","pushkey":"https://elsewhere.example/wp/abc","pushkey_ts":1}]}}
                """
            let answer = try await setup.curl(
                "/_matrix/push/v1/notify", headers: ["Content-Type: application/json"], body: notify)
            #expect(answer.status == 200)
            #expect(answer.body == #"{"rejected":["https://elsewhere.example/wp/abc"]}"#)
            let channel = try await setup.channel()
            var found = false
            for _ in 0..<8 {
                guard let record = try await channel.next().webPush, record.subscription == third["id"] as? String
                else { continue }
                let body = Data(base64Encoded: record.payload) ?? Data()
                let object = try JSONSerialization.jsonObject(with: body) as? [String: Any]
                let notification = object?["notification"] as? [String: Any]
                #expect(notification?["event_id"] as? String == "$ev1")
                #expect(notification?["devices"] == nil)
                #expect(record.urgency == .high)
                found = true
                break
            }
            #expect(found, "the Matrix notification reached the device")
            channel.close()
        }
    }

    @Test func onlyChannelsDeclaringTheFeatureGetMessagesAndSubscriptionsAreCapped() async throws {
        try await Setup.with(try await Setup.start(perApp: 2)) { setup in
            let subscription = try await setup.subscribe(app: "org.example.a", token: "1", vapid: nil)
            let path = "/wp/" + (try #require(subscription["id"] as? String))
            _ = try await setup.subscribe(app: "org.example.a", token: "2", vapid: nil)
            // The app's third registration is over its cap of 2: 429, counted.
            let third = try await setup.harness.device.call(
                "POST", "/device/v1/webpush", body: #"{"app":"org.example.a","token":"3"}"#)
            #expect(third.status == 429 && third.json["error"] as? String == "tooManySubscriptions")
            #expect(
                try await adminMetric(
                    port: setup.harness.gateway.adminPort, limitHits("device", "webpush-subscriptions-app")) == 1)
            // A bad VAPID key is refused before anything is stored.
            let badKey = try await setup.harness.device.call(
                "POST", "/device/v1/webpush", body: #"{"app":"org.example.b","token":"1","vapid":"AAAA"}"#)
            #expect(badKey.status == 400 && badKey.json["error"] as? String == "badVAPIDKey")

            // An agent that does not declare `webpush` (an older one) is sent pushes, not WebPush messages.
            let plain = try await setup.harness.channel()
            #expect(try await setup.curl(path, headers: ["TTL: 60"], body: "held").status == 201)
            await setup.harness.push(1)
            let first = try await plain.next()
            #expect(first.type == "push", "\(first)")
            try await plain.expectNoPush(within: .milliseconds(500))
            plain.close()
            // The same device declaring the feature gets the stored message.
            let declared = try await setup.channel()
            let record = try await declared.next()
            #expect(record.webPush.flatMap { Data(base64Encoded: $0.payload) } == Data("held".utf8), "\(record)")
            declared.close()
        }
    }

    /// A slow HTTP/1.1 client (a head that never ends) is answered 408 and closed at the request deadline, and
    /// the time it held the connection is counted; a pipelined pair on one connection gets two answers in order.
    @Test func http11RequestDeadlineAndPipelining() async throws {
        try await Setup.with(try await Setup.start(requestTimeout: 1)) { setup in
            let subscription = try await setup.subscribe(app: "org.example.a", token: "1", vapid: nil)
            let id = try #require(subscription["id"] as? String)
            let port = try #require(setup.origin.split(separator: ":").last.map(String.init))
            let script = #"""
                import socket, ssl, sys, time
                ctx = ssl.create_default_context(cafile=sys.argv[2]); ctx.set_alpn_protocols(["http/1.1"])
                def conn():
                    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="localhost")
                    assert s.selected_alpn_protocol() == "http/1.1", s.selected_alpn_protocol()
                    return s
                def read_all(s):
                    data = b""
                    s.settimeout(10)
                    while True:
                        chunk = s.recv(65536)
                        if not chunk: return data
                        data += chunk
                s = conn(); s.sendall(b"POST /wp/x HTTP/1.1\r\nHost: localhost\r\nTTL: 1\r\n")
                start = time.monotonic(); slow = read_all(s); held = time.monotonic() - start
                s = conn()
                one = b"POST /wp/%s HTTP/1.1\r\nHost: localhost\r\nTTL: 5\r\nContent-Length: 1\r\n\r\na" % sys.argv[3].encode()
                two = b"GET /_matrix/push/v1/notify HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                s.sendall(one + two); both = read_all(s)
                print(repr((slow.split(b"\r\n")[0], round(held, 1), [l for l in both.split(b"\r\n") if l.startswith(b"HTTP/1.1")])))
                """#
            let out = try await ChildProcess.run(
                setup.python, ["-c", script, port, Repository.cert("ca.pem"), id], timeout: .seconds(60))
            let line = out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(out.status == 0, "\(out.stderr)")
            #expect(line.hasPrefix("(b'HTTP/1.1 408 Request Timeout', "), "\(line)")
            #expect(line.hasSuffix("[b'HTTP/1.1 201 Created', b'HTTP/1.1 200 OK'])"), "\(line)")
            let fields = line.split(separator: ",")
            let held = fields.count > 1 ? Double(fields[1].trimmingCharacters(in: .whitespaces)) ?? 0 : 0
            #expect(held >= 0.5 && held < 5, "closed at the 1 s deadline, not before, not at the idle limit: \(held)")
        }
    }

    /// HTTP/1.1 as senders and proxies put it on the wire (Tests/Interop/webpush_http1.py, raw TLS sockets): a
    /// chunked body with extensions and a trailer is taken, the 4096-byte limit applied to its decoded size (4096
    /// → 201 and delivered byte-equal, 4097 → 413 on a connection that stays open); `Expect: 100-continue`; one
    /// value each of TTL/Urgency/Topic (two `Urgency` fields → 400; a TTL too long for 64 bits is capped, not
    /// refused); 20 pipelined requests answered in order; and hostile framing (overflowing or negative chunk sizes,
    /// Content-Length and Transfer-Encoding together, …) each refused with a precise message and the connection
    /// closed, the listener still serving afterwards.
    @Test func http11ChunkedExpectContinueKeepAliveAndHostileFraming() async throws {
        try await Setup.with(try await Setup.start(requestTimeout: 1)) { setup in
            let subscription = try await setup.subscribe(app: "org.example.a", token: "1", vapid: nil)
            let id = try #require(subscription["id"] as? String)
            let port = try #require(setup.origin.split(separator: ":").last.map(String.init))
            let channel = try await setup.channel()
            let out = try await ChildProcess.run(
                setup.python,
                [Repository.root + "/Tests/Interop/webpush_http1.py", port, Repository.cert("ca.pem"), id],
                timeout: .seconds(90))
            #expect(out.status == 0, "\(out.stderr)")
            let result = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any] ?? [:]
            let keepAlive = (result["keepalive"] as? [[Any]] ?? []).map { row in
                (row[0] as? String ?? "", row[1] as? Int ?? 0, "\(row[2])", row[3] as? String ?? "")
            }
            func row(_ name: String) -> (String, Int, String, String)? { keepAlive.first { $0.0 == name } }
            #expect(keepAlive.count == 8, "every request on the one connection was answered: \(keepAlive)")
            #expect(row("chunked 4096")?.1 == 201 && row("chunked 4096")?.2 == "60", "\(keepAlive)")
            #expect(row("chunked 4097")?.1 == 413, "\(keepAlive)")
            #expect(row("expect")?.1 == 100 && row("expect")?.2 == "201", "\(keepAlive)")
            #expect(row("urgency twice")?.1 == 400, "\(keepAlive)")
            #expect(row("urgency twice")?.3.contains("Urgency is sent more than once") == true, "\(keepAlive)")
            let hugeTTL = row("ttl huge")
            #expect(hugeTTL?.1 == 201 && (Int64(hugeTTL?.2 ?? "") ?? 0) > 0, "\(keepAlive)")
            #expect(row("topic 33")?.1 == 400 && row("topic 32")?.1 == 201, "\(keepAlive)")
            #expect(row("topic not base64url")?.1 == 400, "\(keepAlive)")
            #expect(result["pipelined"] as? [Int] == Array(repeating: 201, count: 20), "\(result)")

            let expected: [String: (Int, String)] = [
                "chunk size overflow": (413, "chunked body exceeds 16384 bytes"),
                "chunk size over the limit": (413, "chunked body exceeds 16384 bytes"),
                "negative chunk size": (400, "is not hexadecimal"),
                "chunk size not hex": (400, "other than ';'"),
                "chunk data longer than its size": (400, "not followed by CRLF"),
                "chunk line bare LF": (400, "bare LF"),
                "chunk line without end": (400, "exceeds 1024 bytes"),
                "trailer without colon": (400, "trailer line without ':'"),
                "truncated chunk": (408, "not complete"),
                "negative content-length": (400, "not a decimal number"),
                "overflowing content-length": (413, "exceeds 16384"),
                "content-length and chunked": (400, "RFC 9112 §6.3"),
                "chunked not last": (400, "must end with chunked"),
                "gzip": (501, "'gzip' is not supported"),
            ]
            let hostile = result["hostile"] as? [[Any]] ?? []
            #expect(hostile.count == expected.count)
            for item in hostile {
                let name = item[0] as? String ?? ""
                let status = item[1] as? Int ?? 0
                let message = item[2] as? String ?? ""
                #expect(status == expected[name]?.0, "\(name): \(status) \(message)")
                #expect(message.contains(expected[name]?.1 ?? "?"), "\(name): \(message)")
                #expect(item[3] as? Bool == true, "\(name): the connection is closed after the refusal")
            }
            #expect(try await setup.curl("/wp/\(id)", headers: ["TTL: 5"]).status == 201, "still serving")

            // The chunked message reached the device as sent (the decoded 4096 bytes).
            let first = try await channel.next()
            let sent = Data((0..<16).flatMap { _ in (0...255).map { UInt8($0) } })
            #expect(first.webPush.flatMap { Data(base64Encoded: $0.payload) } == sent, "\(first)")
            channel.close()
        }
    }

    /// RFC 8292 §2: the JWT's `aud` must be this push service's origin and `exp` in the future, at most 24 hours
    /// ahead (tokens signed with py_vapid: pywebpush would replace a past `exp`).
    @Test func vapidAudienceAndExpiryAreChecked() async throws {
        try await Setup.with(try await Setup.start()) { setup in
            let restricted = try await setup.subscribe(app: "org.example.a", token: "r", vapid: try setup.vapidPublic)
            let endpoint = try #require(restricted["endpoint"] as? String)
            let cases: [([String], Int, String)] = [
                (["--exp-in", "3600"], 201, ""),
                (["--aud", "https://elsewhere.example"], 403, "aud is not"),
                (["--exp-in", "-60"], 403, "expired"),
                (["--exp-in", "90000"], 403, "more than 24 hours"),
            ]
            for (options, status, message) in cases {
                let answer = try await setup.send(endpoint, size: 5, seed: 5, options)
                #expect(answer["status"] as? Int == status, "\(options): \(answer)")
                if !message.isEmpty {
                    #expect((answer["body"] as? String ?? "").contains(message), "\(options): \(answer)")
                }
            }
        }
    }
}
