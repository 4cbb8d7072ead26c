import Foundation
import Glibc
import RouseAPNs
import RouseAgent
import RouseCurl
import RouseGateway

/// `rouse-bench webpush`: the WebPush ingest (issue 28, docs/webpush.md) next to the APNs path through one
/// `rouse-gateway` on loopback, in one run. (a) Ingest rate: h2load `--h1` (HTTP/1.1 keep-alive, one request in
/// flight per connection, as pywebpush and Mastodon send) POSTing a 3000-byte opaque body to `/wp/<id>`, against
/// h2load HTTP/2 POSTing a 3000-byte payload to `/3/device/<token>`, rounds alternating; the ratio of the means
/// (and the WebPush requests over HTTP/2 too, to tell the cost of HTTP/1.1 from that of the WebPush checks).
/// (b) Sender → device latency p50/p99, WebPush (libcurl, HTTP/1.1 keep-alive) and APNs (libcurl, HTTP/2)
/// samples interleaved, measured to the arrival of the record on a connected device channel. (c) In the same loop,
/// a third sample: WebPush → the gateway → a `rouse-agent --user`'s channel → its UnifiedPush distributor →
/// `Connector2.Message` on a private session bus → a running dbus-fast connector, which stamps CLOCK_MONOTONIC on
/// arrival (``ConnectorRig``); its p50/p99 next to (b)'s APNs → device channel figures. (d) D-Bus activation apart:
/// the time to the first message when the connector is not running and the bus starts it from its `.service` file.
enum WebPushBench {
    struct Options {
        var pushes = 10_000
        var bodyBytes = 3000
        var h1Connections = 32
        var h2Connections = 4
        var streams = 100
        var rounds = 2
        var latencySamples = 500
        var activationSamples = 10
        var json = false
        var gateway: String?
        var h2load = "/usr/bin/h2load"
    }

    typealias BenchError = Bench.Failure

    static let usage = """
        usage: rouse-bench webpush [--pushes N] [--body BYTES] [--h1-connections N] [--h2-connections N]
                                   [--streams N] [--rounds N] [--latency-samples N]
                                   [--activation-samples N] [--gateway PATH]
                                   [--h2load PATH] [--json]
        """

    static func run(arguments: [String]) async throws {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return
        }
        let options = try parse(arguments)
        guard FileManager.default.isExecutableFile(atPath: options.h2load) else {
            throw BenchError(description: "\(options.h2load) is missing: run deploy/install-deps.sh")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-webpush-bench-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certs = try GatewayBench.certsDirectory()
        let database = directory + "/bench.sqlite"
        let store = try GatewayConfiguration.openStore(database: database)
        let now = Gateway.systemMilliseconds()
        let ids = ["webpush-ingest", "webpush-latency"]
        let credentials = try Gateway.provisionDevices(store: store, ids: ids, now: now)
        let tokens = try Gateway.provisionTokens(store: store, deviceIDs: ids, topic: "com.example.rouse", now: now)
        let agentSecret = try Gateway.makeEnrollmentSecret(store: store, now: now, validity: .seconds(3600))

        let port = try freePort()
        let origin = "https://localhost:\(port)"
        // The per-subscription rate is the benchmark's to saturate, not the limit's.
        let webPush = """
            {"listen": "127.0.0.1:\(port)", "certificate": "\(certs)/server.pem", "privateKey": "\(certs)/server.key",
             "origin": "\(origin)", "messagesPerSecond": 1000000000, "burst": 1000000000}
            """
        let gateway = try await ChildGateway.start(
            executable: try options.gateway ?? GatewayBench.sibling("rouse-gateway"), directory: directory,
            database: database, certs: certs, webPush: webPush)
        defer { gateway.stop() }
        guard gateway.webPushPort == port else { throw BenchError(description: "the WebPush listener did not start") }
        let jwt = try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: now / 1000)
            .signed(
                with: ProviderToken.privateKey(pem: String(contentsOfFile: certs + "/apns-key.p8", encoding: .utf8)))
        let curl = try CurlHTTPClient()
        let tls = CurlTLSOptions(caFile: certs + "/ca.pem")
        let device = DeviceSide(curl: curl, tls: tls, devicePort: gateway.devicePort)
        let ingestEndpoint = try await device.subscribe(credential: credentials[0], app: "org.example.ingest")
        let latencyEndpoint = try await device.subscribe(credential: credentials[1], app: "org.example.latency")

        var results: [(String, String)] = []
        func report(_ name: String, _ value: String) {
            results.append((name, value))
            if !options.json { print("\(name): \(value)") }
        }
        report("machine", GatewayBench.machine())
        report("load_average_start", loadAverage())
        report("durability", "SQLite WAL, synchronous=FULL, 201/200 after COMMIT")
        report("body_bytes", "\(options.bodyBytes)")

        // (a) Ingest, rounds alternating so that the other load on the machine falls on both alike.
        let body = directory + "/webpush.bin"
        try Data((0..<options.bodyBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(
            to: URL(fileURLWithPath: body))
        let payload = directory + "/apns.json"
        let filler = String(repeating: "x", count: max(0, options.bodyBytes - 40))
        try Data(#"{"aps":{"alert":"bench"},"f":"\#(filler)"}"#.utf8).write(to: URL(fileURLWithPath: payload))
        var webPushRates: [Double] = []
        var apnsRates: [Double] = []
        var webPushH2Rates: [Double] = []
        for round in 1...options.rounds {
            let apns = try await h2load(
                options,
                [
                    "-c", "\(options.h2Connections)", "-m", "\(options.streams)", "-d", payload,
                    "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: com.example.rouse",
                    "-H", "apns-push-type: alert", "https://127.0.0.1:\(gateway.providerPort)/3/device/\(tokens[0])",
                ])
            report("round_\(round)_apns_h2_per_second", String(format: "%.0f", apns.rate))
            report("round_\(round)_apns_h2_succeeded", "\(apns.succeeded)/\(options.pushes)")
            apnsRates.append(apns.rate)
            let h1 = try await h2load(
                options,
                [
                    "--h1", "-c", "\(options.h1Connections)", "-m", "1", "-d", body, "-H", "ttl: 60",
                    "-H", "content-encoding: aes128gcm", "-H", "urgency: normal",
                    ingestEndpoint.replacingOccurrences(of: "https://localhost:", with: "https://127.0.0.1:"),
                ])
            report("round_\(round)_webpush_h1_per_second", String(format: "%.0f", h1.rate))
            report("round_\(round)_webpush_h1_succeeded", "\(h1.succeeded)/\(options.pushes)")
            webPushRates.append(h1.rate)
            // The same WebPush requests over HTTP/2 as the APNs path sends them: what HTTP/1.1 itself costs.
            let h2 = try await h2load(
                options,
                [
                    "-c", "\(options.h2Connections)", "-m", "\(options.streams)", "-d", body, "-H", "ttl: 60",
                    "-H", "content-encoding: aes128gcm", "-H", "urgency: normal",
                    ingestEndpoint.replacingOccurrences(of: "https://localhost:", with: "https://127.0.0.1:"),
                ])
            report("round_\(round)_webpush_h2_per_second", String(format: "%.0f", h2.rate))
            webPushH2Rates.append(h2.rate)
        }
        let webPushMean = webPushRates.reduce(0, +) / Double(webPushRates.count)
        let apnsMean = apnsRates.reduce(0, +) / Double(apnsRates.count)
        report("ingest_webpush_h1_per_second", String(format: "%.0f", webPushMean))
        report("ingest_apns_h2_per_second", String(format: "%.0f", apnsMean))
        report(
            "ingest_webpush_h2_per_second",
            String(format: "%.0f", webPushH2Rates.reduce(0, +) / Double(webPushH2Rates.count)))
        report("ingest_ratio_webpush_to_apns", String(format: "%.2f", apnsMean > 0 ? webPushMean / apnsMean : 0))
        report(
            "ingest_setup",
            "h2load --h1 -c \(options.h1Connections) -m 1 (keep-alive) vs h2load -c \(options.h2Connections) -m "
                + "\(options.streams), \(options.pushes) requests each, \(options.rounds) rounds alternating")

        // (b) Latency to the device channel, (c) to a running connector through the agent's distributor.
        let rig = try await ConnectorRig.start(
            directory: directory + "/distributor",
            repository: URL(fileURLWithPath: certs).deletingLastPathComponent().path,
            certs: certs, devicePort: gateway.devicePort, secret: agentSecret)
        defer { rig.stop() }
        let latency = try await latency(
            options, device: device, credential: credentials[1], webPushEndpoint: latencyEndpoint,
            apnsURL: "https://localhost:\(gateway.providerPort)/3/device/\(tokens[1])", jwt: jwt, rig: rig)
        report(
            "latency_samples",
            "\(latency.webPush.count) + \(latency.apns.count) + \(latency.connector.count) interleaved")
        report("latency_webpush_h1_p50_ms", String(format: "%.3f", GatewayBench.percentile(latency.webPush, 0.50)))
        report("latency_webpush_h1_p99_ms", String(format: "%.3f", GatewayBench.percentile(latency.webPush, 0.99)))
        report("latency_apns_h2_p50_ms", String(format: "%.3f", GatewayBench.percentile(latency.apns, 0.50)))
        report("latency_apns_h2_p99_ms", String(format: "%.3f", GatewayBench.percentile(latency.apns, 0.99)))
        report(
            "latency_measured_to",
            "webpush_h1 and apns_h2: the record's arrival on a device channel (the bench's own); connector: "
                + "Connector2.Message's arrival at a running connector (CLOCK_MONOTONIC) through rouse-agent --user")
        let connectorP99 = GatewayBench.percentile(latency.connector, 0.99)
        let apnsP99 = GatewayBench.percentile(latency.apns, 0.99)
        report(
            "latency_connector_webpush_h1_p50_ms",
            String(format: "%.3f", GatewayBench.percentile(latency.connector, 0.50)))
        report("latency_connector_webpush_h1_p99_ms", String(format: "%.3f", connectorP99))
        report("latency_connector_p99_minus_apns_p99_ms", String(format: "%.3f", connectorP99 - apnsP99))
        report("latency_connector_target", connectorP99 <= apnsP99 + 5 ? "met (<= APNs p99 + 5 ms)" : "MISSED")

        // (d) D-Bus activation of a stopped app, apart.
        let activation = try await activation(options, device: device, rig: rig)
        report("activation_samples", "\(activation.count)")
        report("activation_first_message_p50_ms", String(format: "%.1f", GatewayBench.percentile(activation, 0.50)))
        report("activation_first_message_max_ms", String(format: "%.1f", activation.max() ?? 0))
        report(
            "activation_measured_to",
            "Connector2.Message's arrival at a connector D-Bus-activated for it (python3 + dbus-fast start included)")
        if let status = try? await rig.status(), let up = status.unifiedPush {
            report("distributor_delivered_acknowledged_failed", "\(up.delivered)/\(up.acknowledged)/\(up.failed)")
        }
        report("load_average_end", loadAverage())
        await curl.shutdown()
        if options.json {
            let body = results.map { "\(JSONText.quoted($0.0)):\(JSONText.quoted($0.1))" }.joined(separator: ",")
            print("{" + body + "}")
        }
    }

    /// The device's side: subscriptions, the channel, acknowledgements.
    struct DeviceSide {
        let curl: CurlHTTPClient
        let tls: CurlTLSOptions
        let devicePort: UInt16

        func request(_ method: String, _ path: String, credential: String, body: String = "") -> CurlRequest {
            CurlRequest(
                method: method, url: "https://localhost:\(devicePort)\(path)",
                headers: [
                    (name: "authorization", value: "Bearer \(credential)"),
                    (name: "content-type", value: "application/json"),
                ], body: Array(body.utf8), timeout: .seconds(3600), tls: tls)
        }

        /// `POST /device/v1/webpush`; the endpoint.
        func subscribe(credential: String, app: String) async throws -> String {
            let response = try await curl.send(
                request("POST", "/device/v1/webpush", credential: credential, body: #"{"app":"\#(app)","token":"t"}"#))
            let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            guard response.status == 201, let endpoint = object?["endpoint"] as? String else {
                throw BenchError(
                    description: "subscribe: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
            }
            return endpoint
        }

        func ack(_ ids: [String], credential: String) async throws {
            let body = "{\"ids\":[" + ids.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
            _ = try await curl.send(request("POST", "/device/v1/ack", credential: credential, body: body))
        }
    }

    static func latency(
        _ options: Options, device: DeviceSide, credential: String, webPushEndpoint: String, apnsURL: String,
        jwt: String, rig: ConnectorRig
    ) async throws -> (webPush: [Double], apns: [Double], connector: [Double]) {
        var channelRequest = device.request("GET", "/device/v1/channel", credential: credential)
        channelRequest.headers.append((name: "rouse-features", value: "webpush"))
        let response = try await device.curl.stream(channelRequest)
        guard response.head.status == 200 else { throw BenchError(description: "channel: \(response.head.status)") }
        var lines = LineReader(response.body.makeAsyncIterator())
        _ = try await lines.next()  // hello
        let body = (0..<options.bodyBytes).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 3) }
        let filler = String(repeating: "x", count: max(0, options.bodyBytes - 40))
        let webPush = CurlRequest(
            method: "POST", url: webPushEndpoint,
            headers: [
                (name: "ttl", value: "60"), (name: "content-encoding", value: "aes128gcm"),
                (name: "urgency", value: "high"),
            ], body: body, httpVersion: .http1_1, tls: device.tls)
        let apns = CurlRequest(
            method: "POST", url: apnsURL,
            headers: [
                (name: "authorization", value: "bearer \(jwt)"), (name: "apns-topic", value: "com.example.rouse"),
                (name: "apns-push-type", value: "alert"),
            ], body: Array(#"{"aps":{"alert":"latency"},"f":"\#(filler)"}"#.utf8), httpVersion: .http2TLS,
            tls: device.tls)
        var toConnector = webPush
        toConnector.url = rig.runningEndpoint
        var connectorEvents = rig.events(ConnectorRig.running)
        var webPushSamples: [Double] = []
        var apnsSamples: [Double] = []
        var connectorSamples: [Double] = []
        var unacked: [String] = []
        // A warm-up round opens the connections (TLS handshakes are not the latency measured) and starts the
        // running connector.
        for sample in -3..<(3 * options.latencySamples) {
            if (sample + 3) % 3 == 2 {
                let sent = ConnectorRig.monotonicNanoseconds()
                let answer = try await device.curl.send(toConnector)
                guard answer.status == 201 else {
                    throw BenchError(description: "latency: WebPush to the connector answered \(answer.status)")
                }
                let event = try await connectorEvents.next(timeout: .seconds(30)) {
                    $0["call"] as? String == "Message"
                }
                guard let arrived = (event["mono"] as? NSNumber)?.int64Value else {
                    throw BenchError(description: "the connector's Message record has no mono time")
                }
                if sample >= 0 { connectorSamples.append(Double(arrived - sent) / 1_000_000) }
                continue
            }
            let isWebPush = (sample + 3) % 3 == 0
            let start = ContinuousClock.now
            let answer = try await device.curl.send(isWebPush ? webPush : apns)
            guard answer.status == (isWebPush ? 201 : 200) else {
                throw BenchError(description: "latency: \(isWebPush ? "WebPush" : "APNs") answered \(answer.status)")
            }
            let type = isWebPush ? "\"type\":\"webpush\"" : "\"type\":\"push\""
            var line = try await lines.next()
            while let current = line, !current.contains(type) { line = try await lines.next() }
            guard let line else { throw BenchError(description: "the channel ended") }
            let milliseconds = (ContinuousClock.now - start).seconds * 1000
            if sample >= 0 {
                if isWebPush { webPushSamples.append(milliseconds) } else { apnsSamples.append(milliseconds) }
            }
            if let id = line.split(separator: "\"id\":\"").dropFirst().first?.split(separator: "\"").first {
                unacked.append(String(id))
            }
            if unacked.count >= 32 {
                try await device.ack(unacked, credential: credential)
                unacked.removeAll()
            }
        }
        return (webPushSamples, apnsSamples, connectorSamples)
    }

    /// Messages to the app that is not running: each D-Bus-activates it; the time from the send to the call's
    /// arrival. The app exits 0.3 s after each message (its `Exit` record) before the next is sent.
    static func activation(_ options: Options, device: DeviceSide, rig: ConnectorRig) async throws -> [Double] {
        var request = CurlRequest(
            method: "POST", url: rig.stoppedEndpoint,
            headers: [
                (name: "ttl", value: "60"), (name: "content-encoding", value: "aes128gcm"),
                (name: "urgency", value: "high"),
            ], body: (0..<options.bodyBytes).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }, httpVersion: .http1_1,
            tls: device.tls)
        request.timeout = .seconds(30)
        var events = rig.events(ConnectorRig.stopped)
        var samples: [Double] = []
        for _ in 0..<options.activationSamples {
            let sent = ConnectorRig.monotonicNanoseconds()
            let answer = try await device.curl.send(request)
            guard answer.status == 201 else {
                throw BenchError(description: "activation: WebPush answered \(answer.status)")
            }
            let event = try await events.next(timeout: .seconds(30)) { $0["call"] as? String == "Message" }
            guard let arrived = (event["mono"] as? NSNumber)?.int64Value else {
                throw BenchError(description: "the connector's Message record has no mono time")
            }
            samples.append(Double(arrived - sent) / 1_000_000)
            _ = try await events.next(timeout: .seconds(30)) { $0["call"] as? String == "Exit" }
            // The exit's disconnect reaches the bus before the next activation.
            try await Task.sleep(for: .milliseconds(100))
        }
        return samples
    }

    /// Runs h2load for `options.pushes` requests; its rate and 2xx count.
    static func h2load(_ options: Options, _ arguments: [String]) async throws -> (rate: Double, succeeded: Int) {
        let output = try await GatewayBench.runProcess(options.h2load, ["-n", "\(options.pushes)"] + arguments)
        var rate = 0.0
        var succeeded = 0
        for line in output.split(separator: "\n") {
            if line.hasPrefix("finished in"), let field = line.split(separator: ",").dropFirst().first {
                rate = Double(field.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
            }
            if line.hasPrefix("status codes:") {
                succeeded =
                    Int(
                        line.dropFirst("status codes:".count).trimmingCharacters(in: .whitespaces)
                            .split(separator: " ").first ?? "") ?? 0
            }
        }
        guard succeeded > 0 else { throw BenchError(description: "h2load: no request succeeded\n\(output)") }
        return (rate, succeeded)
    }

    /// `/proc/loadavg`'s three averages.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// A loopback port free now (the origin names it, so it is chosen before the gateway starts).
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw BenchError(description: "bind: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func value() throws -> String {
            index += 1
            guard index < arguments.count else {
                throw BenchError(description: "\(arguments[index - 1]) needs a value\n\(usage)")
            }
            return arguments[index]
        }
        func number(_ range: ClosedRange<Int>) throws -> Int {
            let text = try value()
            guard let n = Int(text), range.contains(n) else {
                throw BenchError(description: "\(arguments[index - 1]): '\(text)' is not in \(range)\n\(usage)")
            }
            return n
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--pushes": options.pushes = try number(1...10_000_000)
            case "--body": options.bodyBytes = try number(64...4096)
            case "--h1-connections": options.h1Connections = try number(1...1000)
            case "--h2-connections": options.h2Connections = try number(1...1000)
            case "--streams": options.streams = try number(1...1000)
            case "--rounds": options.rounds = try number(1...20)
            case "--latency-samples": options.latencySamples = try number(1...1_000_000)
            case "--activation-samples": options.activationSamples = try number(1...1000)
            case "--gateway": options.gateway = try value()
            case "--h2load": options.h2load = try value()
            case "--json": options.json = true
            default: throw BenchError(description: "unknown argument \(arguments[index])\n\(usage)")
            }
            index += 1
        }
        return options
    }
}
