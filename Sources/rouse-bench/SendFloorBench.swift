import Foundation
import RouseChildProcess

/// `rouse-bench send --versus-floor`: every sender against one independent HTTP/2 server in one run.
///
/// The server is `nghttpd` (nghttp2's own server, one worker, TLS, stream limit 1000 as APNs advertises) serving an
/// empty file for every `/3/device/<token>`, so each POST is answered 200 without a body. Against it, in turn and
/// `--runs` times (interleaved, so a change of load hits every client alike): `h2load -c1 -m100` (the floor),
/// a plain C libcurl multi program (100 streams, compiled here), `rouse send background` with the native engine
/// (`--concurrency 100`) and the curl engine, then `h2load -c4 -m100` next to `rouse send --connections 4
/// --concurrency 400`. Every client is a child process measured whole by `/usr/bin/time` (wait4's rusage):
/// pushes/s from start to exit (start-up included), CPU µs per push (user + system), peak RSS.
///
/// With `--server minimal` the server is instead a minimal C nghttp2 server compiled here
/// (``MinimalH2ServerProgram``: one thread, TLS, answers 200 to everything), so cheap that the clients' own cost
/// shows.
///
/// Options: `--pushes N` (default 200000, all distinct tokens), `--runs N` (3), `--server nghttpd|minimal`,
/// `--certs DIR`, `--rouse PATH`, `--skip-curl`, `--json`, `--compare PATH` (another `rouse` binary, e.g. the build
/// before a change: its native engine runs as one more client, interleaved with the others, so a before/after
/// comparison shares the run's load), `--one-connection` (leave out the 4-connection rows).
enum SendFloorBench {
    struct Options {
        var pushes = 200_000
        var runs = 3
        var certs = "certs"
        var rouse = Bench.binDirectory + "/rouse"
        var skipCurl = false
        var json = false
        /// `nghttpd` or `minimal` (the C server compiled by the bench).
        var server = "nghttpd"
        /// Another `rouse` to measure beside `rouse` (its native engine, 100 streams).
        var compare: String?
        /// Only the one-connection rows.
        var oneConnection = false
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--versus-floor": break
            case "--pushes":
                options.pushes = try Bench.value(after: argument, from: &iterator, "a count ≥ 1") { $0 >= 1 }
            case "--runs": options.runs = try Bench.value(after: argument, from: &iterator, "a count ≥ 1") { $0 >= 1 }
            case "--certs": options.certs = try Bench.value(after: argument, from: &iterator, "a directory")
            case "--rouse": options.rouse = try Bench.value(after: argument, from: &iterator, "a path")
            case "--skip-curl": options.skipCurl = true
            case "--server":
                options.server = try Bench.value(after: argument, from: &iterator, "nghttpd or minimal") {
                    $0 == "nghttpd" || $0 == "minimal"
                }
            case "--json": options.json = true
            case "--compare": options.compare = try Bench.value(after: argument, from: &iterator, "a path")
            case "--one-connection": options.oneConnection = true
            default:
                throw Bench.Failure(
                    description:
                        "unknown option \(argument) (--versus-floor [--pushes N] [--runs N] [--server nghttpd|minimal] [--certs DIR] [--rouse PATH] [--compare PATH] [--one-connection] [--skip-curl] [--json])"
                )
            }
        }
        return options
    }

    /// One client to measure: a command line, and how to count its 200 answers from its output.
    struct Client {
        var name: String
        var path: String
        var arguments: [String]
        /// The row whose rate this one is compared with (nil: the floor itself).
        var reference: String?
        var delivered: (ChildProcess.Output) -> Int
    }

    /// One measured run of a client.
    struct Sample {
        var seconds: Double
        var cpuSeconds: Double
        var peakKiB: Int
        var delivered: Int
    }

    static func run(arguments: [String]) async throws {
        let options = try parse(arguments)
        let rouse = try Bench.tool(options.rouse)
        if let compare = options.compare { _ = try Bench.tool(compare) }
        let h2load = try Bench.tool("/usr/bin/h2load")
        let time = try Bench.tool("/usr/bin/time")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-bench-floor-\(getpid())")
            .path
        try FileManager.default.createDirectory(
            atPath: directory + "/htdocs/3/device", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let tokens = (0..<options.pushes).map { String(format: "%08x", $0) + String(repeating: "5a", count: 28) }
        let port = Bench.freePort()
        let (server, serverName) = try startServer(options: options, tokens: tokens, directory: directory, port: port)
        defer { Bench.stop(server) }

        let base = "https://127.0.0.1:\(port)/3/device/"
        let tokensFile = directory + "/tokens.txt"
        let urisFile = directory + "/uris.txt"
        let payloadFile = directory + "/payload.json"
        let headersFile = directory + "/headers.txt"
        try tokens.joined(separator: "\n").write(toFile: tokensFile, atomically: true, encoding: .utf8)
        try tokens.map { base + $0 }.joined(separator: "\n").write(toFile: urisFile, atomically: true, encoding: .utf8)
        // What `rouse send background` sends (its apns-id, one per push, is left out: h2load cannot vary it).
        try #"{"aps":{"content-available":1}}"#.write(toFile: payloadFile, atomically: true, encoding: .utf8)
        let keyPEM = try String(contentsOfFile: options.certs + "/apns-key.p8", encoding: .utf8)
        let headers = [
            "authorization: bearer \(try SendBench.jwt(keyPEM: keyPEM))", "apns-push-type: background",
            "apns-topic: com.example.rouse", "apns-priority: 5",
        ]
        try headers.joined(separator: "\n").write(toFile: headersFile, atomically: true, encoding: .utf8)
        let curlMulti = try CurlMultiProgram.build(in: directory)

        let clients = makeClients(
            options: options, rouse: rouse, h2load: h2load, curlMulti: curlMulti, base: base, port: port,
            files: (tokensFile, urisFile, payloadFile, headersFile), headers: headers)
        let loadBefore = loadAverage()
        if !options.json {
            print(
                "versus-floor: \(serverName) on 127.0.0.1:\(port), \(options.pushes) pushes to "
                    + "\(options.pushes) distinct tokens, \(options.runs) runs each; load average \(loadBefore)")
        }
        var samples: [String: [Sample]] = [:]
        for _ in 0..<options.runs {
            for client in clients {
                samples[client.name, default: []].append(
                    try measure(client, time: time, output: directory + "/time.txt"))
            }
        }
        let loadAfter = loadAverage()
        report(clients: clients, samples: samples, options: options, load: (loadBefore, loadAfter))
    }

    /// Starts the server the clients are measured against; returns it and its name for the report.
    static func startServer(options: Options, tokens: [String], directory: String, port: UInt16) throws -> (
        RunningChild, String
    ) {
        if options.server == "minimal" {
            let binary = try MinimalH2ServerProgram.build(in: directory)
            let server = try Bench.startServer(
                binary, [String(port), options.certs + "/server.pem", options.certs + "/server.key"], port: port)
            return (server, "minimal C nghttp2 server (1 thread, TLS, 200 to everything)")
        }
        let nghttpd = try Bench.tool("/usr/sbin/nghttpd")
        for token in tokens {
            guard FileManager.default.createFile(atPath: directory + "/htdocs/3/device/" + token, contents: nil) else {
                throw Bench.Failure(description: "cannot create \(directory)/htdocs/3/device/\(token)")
            }
        }
        let server = try Bench.startServer(
            nghttpd,
            [
                "-m", "1000", "-d", directory + "/htdocs", "-a", "127.0.0.1", String(port),
                options.certs + "/server.key", options.certs + "/server.pem",
            ], port: port)
        return (server, "nghttpd (nghttp2 1.52, 1 worker, TLS)")
    }

    static func makeClients(
        options: Options, rouse: String, h2load: String, curlMulti: String, base: String, port: UInt16,
        files: (tokens: String, uris: String, payload: String, headers: String), headers: [String]
    ) -> [Client] {
        let n = String(options.pushes)
        func h2loadClient(_ connections: Int) -> Client {
            Client(
                name: "h2load -c\(connections) -m100", path: h2load,
                arguments: ["-n", n, "-c", String(connections), "-m", "100", "-i", files.uris, "-d", files.payload]
                    + headers.flatMap { ["-H", $0] },
                reference: connections == 1 ? nil : "h2load -c1 -m100"
            ) { output in
                // "status codes: 200000 2xx, 0 3xx, 0 4xx, 0 5xx"
                let line = output.stdout.split(separator: "\n").first { $0.hasPrefix("status codes:") } ?? ""
                return Int(line.dropFirst("status codes: ".count).prefix { $0.isNumber }) ?? 0
            }
        }
        func rouseClient(_ name: String, _ extra: [String], reference: String, path: String = rouse) -> Client {
            Client(
                name: name, path: path,
                arguments: [
                    "send", "background", "--tokens-file", files.tokens, "--topic", "com.example.rouse", "--env",
                    "https://127.0.0.1:\(port)", "--ca-file", options.certs + "/ca.pem", "--auth-key",
                    options.certs + "/apns-key.p8", "--key-id", "ROUSEKEY01", "--team-id", "ROUSETEAM1", "--quiet",
                ] + extra,
                reference: reference
            ) { output in
                // "200000 pushes in 4.10 s (48780/s): 200000 delivered, …"
                guard let range = output.stdout.range(of: "/s): ") else { return 0 }
                return Int(output.stdout[range.upperBound...].prefix { $0.isNumber }) ?? 0
            }
        }
        var clients = [h2loadClient(1)]
        if !options.skipCurl {
            clients.append(
                Client(
                    name: "C libcurl multi, 100 streams", path: curlMulti,
                    arguments: [base, files.tokens, files.payload, "100", options.certs + "/ca.pem", files.headers],
                    reference: "h2load -c1 -m100"
                ) { output in Int(output.stdout.split(separator: " ").last?.prefix { $0.isNumber } ?? "") ?? 0 })
        }
        clients.append(rouseClient("rouse send native, 100", ["--concurrency", "100"], reference: "h2load -c1 -m100"))
        if let compare = options.compare {
            clients.append(
                rouseClient(
                    "compared rouse native, 100", ["--concurrency", "100"], reference: "h2load -c1 -m100", path: compare
                ))
        }
        if !options.skipCurl {
            clients.append(
                rouseClient(
                    "rouse send curl, 100", ["--concurrency", "100", "--transport", "curl"],
                    reference: "C libcurl multi, 100 streams"))
        }
        if options.oneConnection { return clients }
        clients.append(h2loadClient(4))
        clients.append(
            rouseClient(
                "rouse send native, 4 conns, 400", ["--concurrency", "400", "--connections", "4"],
                reference: "h2load -c4 -m100"))
        return clients
    }

    /// Runs `client` under `/usr/bin/time` (wall, user, system, peak RSS of the child alone).
    static func measure(_ client: Client, time: String, output: String) throws -> Sample {
        let result = try ChildProcess.runSync(
            time, ["-f", "%e %U %S %M", "-o", output, client.path] + client.arguments)
        let fields = try String(contentsOfFile: output, encoding: .utf8).split(whereSeparator: \.isWhitespace)
            .suffix(4).compactMap { Double($0) }
        guard fields.count == 4 else {
            throw Bench.Failure(description: "\(client.name): no figures from /usr/bin/time (status \(result.status))")
        }
        return Sample(
            seconds: fields[0], cpuSeconds: fields[1] + fields[2], peakKiB: Int(fields[3]),
            delivered: client.delivered(result))
    }

    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "").split(separator: " ").prefix(3)
            .joined(separator: " ")
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    static func report(
        clients: [Client], samples: [String: [Sample]], options: Options, load: (before: String, after: String)
    ) {
        let n = Double(options.pushes)
        var rates: [String: Double] = [:]
        var cpus: [String: Double] = [:]
        for client in clients {
            let runs = samples[client.name] ?? []
            rates[client.name] = median(runs.map { n / max($0.seconds, 0.01) })
            cpus[client.name] = median(runs.map { $0.cpuSeconds * 1e6 / n })
        }
        if !options.json {
            print("")
            print(
                "client                            pushes/s  (runs)                       CPU µs/push  peak RSS MB"
                    + "  delivered (min)  rate vs      CPU vs")
        }
        for client in clients {
            let runs = samples[client.name] ?? []
            let rate = rates[client.name] ?? 0
            let cpu = cpus[client.name] ?? 0
            let peak = Double(runs.map(\.peakKiB).max() ?? 0) / 1024
            let delivered = runs.map(\.delivered).min() ?? 0
            let reference = client.reference ?? client.name
            let rateRatio = rate / max(rates[reference] ?? 1, 1)
            let cpuRatio = cpu / max(cpus[reference] ?? 1, 0.001)
            let perRun = runs.map { String(format: "%.0f", n / max($0.seconds, 0.01)) }.joined(separator: " ")
            if options.json {
                let runsJSON = runs.map {
                    String(
                        format: #"{"seconds":%.3f,"cpuSeconds":%.3f,"peakKiB":%d,"delivered":%d}"#, $0.seconds,
                        $0.cpuSeconds, $0.peakKiB, $0.delivered)
                }.joined(separator: ",")
                print(
                    String(
                        format:
                            #"{"client":"%@","pushes":%d,"rate":%.0f,"cpuMicrosPerPush":%.2f,"peakRSSMB":%.1f,"delivered":%d,"reference":"%@","rateRatio":%.3f,"cpuRatio":%.2f,"runs":[%@]}"#,
                        client.name, options.pushes, rate, cpu, peak, delivered, reference, rateRatio, cpuRatio,
                        runsJSON))
            } else {
                print(
                    String(
                        format: "%@ %9.0f  %@ %11.2f %12.1f  %15d  %5.0f%%  %8.2f×   (vs %@)",
                        client.name.padding(toLength: 32, withPad: " ", startingAt: 0), rate,
                        "(\(perRun))".padding(toLength: 28, withPad: " ", startingAt: 0), cpu, peak,
                        delivered, rateRatio * 100, cpuRatio, reference))
            }
        }
        let scaling =
            (rates["rouse send native, 4 conns, 400"] ?? 0) / max(rates["rouse send native, 100"] ?? 1, 1)
        if options.json {
            print(
                String(
                    format: #"{"nativeFourConnectionScaling":%.2f,"loadBefore":"%@","loadAfter":"%@"}"#, scaling,
                    load.before, load.after))
        } else {
            if !options.oneConnection { print(String(format: "native engine, 4 connections vs 1: %.2f×", scaling)) }
            if options.compare != nil {
                let now = cpus["rouse send native, 100"] ?? 0
                let before = cpus["compared rouse native, 100"] ?? 0
                print(
                    String(
                        format: "rouse vs compared rouse, same run: CPU %.2f vs %.2f µs/push (%.0f%%), rate %.2f×", now,
                        before, now / max(before, 0.001) * 100,
                        (rates["rouse send native, 100"] ?? 0) / max(rates["compared rouse native, 100"] ?? 1, 1)))
            }
            print("load average before \(load.before), after \(load.after)")
        }
    }
}
