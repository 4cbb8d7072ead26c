import Foundation
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseGateway
import RouseSIPLab

/// `rouse-bench sip`: a SIP call's INVITE → 200 OK at the caller (SIPp), with Kamailio as the proxy and baresip as
/// the softphone (`RouseSIPLab`, deploy/sip), side by side in one run:
/// - S0, the reference: baresip registered and awake;
/// - S1: no softphone running: Kamailio holds the INVITE and runs `rouse send voip` to `rouse-gateway`;
///   `rouse-agent` launches the Python handler (deploy/sip/rouse-sip-handler.py), which reports the call, starts
///   baresip; its REGISTER resumes the INVITE; baresip answers (with the C handler too);
/// - S2: baresip registered over TCP through its handler (deploy/sip/rouse-sip-bridge.py), which gave the agent the
///   connection as its watched VoIP socket; frozen between calls, woken by each INVITE on it (`SIPBench+S2.swift`),
///   then the agent's idle wake-ups while it holds the frozen registered phone;
/// - the RFC 8599 variant: S0 and S1 with liblinphone (linphone-daemon) as the softphone, the proxy learning its push
///   token from its REGISTER's Contact parameters (`SIPBench+Linphone.swift`);
/// - S1 once more with the push sent through `rouse-pushd` (Kamailio's http_client) instead of one-shot `rouse send`.
/// The gateway, agent, `rouse` are this build's siblings; the calls alternate in rounds (S0 batch, S1 batch) so
/// that load on the machine falls on both.
enum SIPBench {
    static let usage =
        "usage: rouse-bench sip [--calls N] [--rounds N] [--period-ms N] [--idle-seconds N] [--no-s2] [--no-pushd] [--no-linphone] [--json]"

    struct Options {
        var calls = 20
        var rounds = 1
        var periodMs = 1500
        var idleSeconds = 60
        var s2 = true
        var pushd = true
        var linphone = true
        var json = false
    }

    static func run(arguments: [String]) async throws {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let option = iterator.next() {
            switch option {
            case "--calls":
                options.calls = try Bench.value(after: option, from: &iterator, "a count 1-1000") {
                    (1...1000).contains($0)
                }
            case "--rounds":
                options.rounds = try Bench.value(after: option, from: &iterator, "a count 1-100") {
                    (1...100).contains($0)
                }
            case "--period-ms":
                options.periodMs = try Bench.value(after: option, from: &iterator, "milliseconds 200-60000") {
                    (200...60000).contains($0)
                }
            case "--idle-seconds":
                options.idleSeconds = try Bench.value(after: option, from: &iterator, "seconds 5-3600") {
                    (5...3600).contains($0)
                }
            case "--no-s2": options.s2 = false
            case "--no-pushd": options.pushd = false
            case "--no-linphone": options.linphone = false
            case "--json": options.json = true
            default: throw GatewayBench.BenchError(description: usage)
            }
        }
        var results: [(String, String)] = []
        func report(_ name: String, _ value: String) {
            results.append((name, value))
            if !options.json { print("\(name): \(value)") }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-sip-bench-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory + "/handlers", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certs = try GatewayBench.certsDirectory()
        let root = URL(fileURLWithPath: certs).deletingLastPathComponent().path
        let lab = try SIPLab(directory: directory + "/sip", files: root + "/deploy/sip")
        report("machine", GatewayBench.machine())

        let database = directory + "/bench.sqlite"
        let store = try SQLiteGatewayStore(path: database)
        let secret = try Gateway.makeEnrollmentSecret(
            store: store, now: Gateway.systemMilliseconds(), validity: .seconds(3600))
        let gateway = try await ChildGateway.start(
            executable: try GatewayBench.sibling("rouse-gateway"), directory: directory, database: database,
            certs: certs, keyTopics: #"["*"]"#)
        defer { gateway.stop() }
        // Both handlers, each with its topic (so its own token): S1 is run once with each.
        let topics: [SIPLab.Handler: String] = [.python: "com.example.py", .c: "com.example.c"]
        for handler in SIPLab.Handler.allCases {
            let file = try await lab.handlerFile(
                handler, topic: topics[handler] ?? "", clients: root + "/clients",
                log: directory + "/\(handler).jsonl", name: "phone-\(handler)")
            try Data(file.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/phone-\(handler).toml"))
        }
        try Data(
            Self.socketWokenHandlerFile(lab: lab, clients: root + "/clients", log: directory + "/s2.jsonl").utf8
        ).write(to: URL(fileURLWithPath: directory + "/handlers/phone-s2.toml"))
        let linphone = options.linphone ? try lab.linphonePhone() : nil
        if let linphone {
            let file = Self.linphoneHandlerFile(
                phone: linphone, clients: root + "/clients", log: directory + "/linphone.jsonl")
            try Data(file.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/phone-linphone.toml"))
        }
        let socket = directory + "/agent.sock"
        let agent = try ChildProcess.start(
            try GatewayBench.sibling("rouse-agent"),
            [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", certs + "/ca.pem", "--enroll-secret",
                secret, "--handlers", directory + "/handlers", "--state-dir", directory + "/state", "--socket", socket,
                "--assume-reachable", "--log-level", "error",
            ], stderr: .inherit)
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        func status() async throws -> AgentStatus? { try await Bench.agentStatus(socket: socket) }
        try await SIPLab.until("the agent's channel open and both VoIP tokens", timeout: .seconds(30)) {
            let current = try? await status()
            return current?.channel == "open"
                && (Array(topics.values) + (linphone == nil ? [] : [Self.linphoneTopic])).allSatisfy {
                    current?.tokens?[$0 + ".voip"] != nil
                }
        }
        let tokens = try await status()?.tokens ?? [:]
        var kamailio = try await lab.startKamailio(
            environment: lab.pushEnvironment(
                rouse: try GatewayBench.sibling("rouse"), providerPort: gateway.providerPort, certs: certs,
                topic: "com.example.py"))
        defer {
            kamailio.terminate()
            kamailio.waitUntilExit()
        }

        var awake: [Double] = []
        var woken: [SIPLab.Handler: [Double]] = [:]
        var failures = 0
        var pushesBefore: [SIPLab.Handler: Int] = [:]
        var pushes = 0
        for round in 1...options.rounds {
            let phone = try lab.startBaresip()
            try await SIPLab.until("baresip registered") { try await lab.registered() }
            let s0 = try await lab.calls("s0-\(round)", count: options.calls, period: .milliseconds(100))
            phone.terminate()
            _ = try await phone.wait(timeout: .seconds(10))
            try await SIPLab.until("baresip's binding gone") { try await !lab.registered() }
            awake += s0.answeredMilliseconds
            failures += s0.attempted - s0.answeredMilliseconds.count
            var line = "round \(round): S0 \(s0.summary)"
            for handler in SIPLab.Handler.allCases {
                // The proxy pushes to this handler's token and topic (kamcmd, as an app uploads its token).
                try await lab.storeToken(tokens[(topics[handler] ?? "") + ".voip"] ?? "", topic: topics[handler])
                if round == 1 { pushesBefore[handler] = pushes }
                let s1 = try await lab.calls(
                    "s1-\(handler)-\(round)", count: options.calls, period: .milliseconds(options.periodMs))
                pushes += options.calls
                woken[handler, default: []] += s1.answeredMilliseconds
                failures += s1.attempted - s1.answeredMilliseconds.count
                line += "; S1 (\(handler)) \(s1.summary)"
            }
            if !options.json { print(line) }
        }
        let total = options.calls * options.rounds
        let s0 = SIPCallRun(tag: "s0", attempted: total, answeredMilliseconds: awake, sippStatus: 0, sippOutput: "")
        let handlers = try await status()?.handlers ?? []
        let strikes = handlers.filter { $0.name.hasPrefix("phone-") }.map(\.strikes).reduce(0, +)
        report("S0 awake baresip (reference)", s0.summary)
        var json: [String: Any] = [
            "benchmark": "sip", "calls": total, "strikes": strikes,
            "s0": [
                "p50": s0.quantile(0.5), "p95": s0.quantile(0.95), "max": awake.max() ?? 0, "answered": awake.count,
            ],
        ]
        for handler in SIPLab.Handler.allCases {
            let times = woken[handler] ?? []
            let s1 = SIPCallRun(tag: "s1", attempted: total, answeredMilliseconds: times, sippStatus: 0, sippOutput: "")
            report("S1 push-woken, \(handler) handler (rouse send → gateway → agent → handler → baresip)", s1.summary)
            report(
                "ratio S1 (\(handler))/S0",
                String(
                    format: "p50 %.1f×, p95 %.1f×, max %.1f×", s1.quantile(0.5) / s0.quantile(0.5),
                    s1.quantile(0.95) / s0.quantile(0.95), (times.max() ?? .nan) / (awake.max() ?? .nan)))
            // Stages from the first round (the proxy's lines of the calls before this handler's are skipped).
            for (stage, milliseconds) in lab.stages(
                handlerLog: directory + "/\(handler).jsonl", skip: pushesBefore[handler] ?? 0)
            {
                report("S1 (\(handler)) stage p50: \(stage)", String(format: "%.1f ms", milliseconds))
            }
            json["s1-\(handler)"] = [
                "p50": s1.quantile(0.5), "p95": s1.quantile(0.95), "max": times.max() ?? 0, "answered": times.count,
            ]
        }
        // The RFC 8599 variant: linphone, the token learnt from its REGISTER (no kamcmd upload).
        if let linphone {
            let runs = try await Self.linphone(
                lab: lab, phone: linphone, token: tokens[Self.linphoneTopic + ".voip"] ?? "",
                clients: root + "/clients", directory: directory, calls: options.calls, periodMs: options.periodMs)
            failures += runs.awake.attempted - runs.awake.answeredMilliseconds.count
            failures += runs.woken.attempted - runs.woken.answeredMilliseconds.count
            report("S0 awake linphone (RFC 8599 REGISTER)", runs.awake.summary)
            report(
                "S1 push-woken linphone, python handler (token learnt from its REGISTER)", runs.woken.summary)
            report(
                "ratio S1 (linphone)/S0 (baresip), and /S0 (linphone)",
                String(
                    format: "p50 %.1f×, p95 %.1f×; p50 %.1f×, p95 %.1f×", runs.woken.quantile(0.5) / s0.quantile(0.5),
                    runs.woken.quantile(0.95) / s0.quantile(0.95),
                    runs.woken.quantile(0.5) / runs.awake.quantile(0.5),
                    runs.woken.quantile(0.95) / runs.awake.quantile(0.95)))
            for (name, run) in [("s0-linphone", runs.awake), ("s1-linphone", runs.woken)] {
                json[name] = [
                    "p50": run.quantile(0.5), "p95": run.quantile(0.95),
                    "max": run.answeredMilliseconds.max() ?? 0, "answered": run.answeredMilliseconds.count,
                ]
            }
        }
        // S1 again (Python handler), the push through rouse-pushd: Kamailio restarted on the same recipe with
        // ROUSE_PUSHD defined (http_client to pushd's TCP listener instead of exec rouse send).
        var pushd: Pushd?
        defer {
            pushd?.child.terminate()
            pushd?.child.waitUntilExit()
        }
        if options.pushd {
            let service = try await Self.startPushd(
                directory: directory, certs: certs, providerPort: gateway.providerPort, app: "py",
                topic: topics[.python] ?? "")
            pushd = service
            kamailio.terminate()
            kamailio.waitUntilExit()
            kamailio = try await lab.startKamailio(
                environment: ["ROUSE_PUSHD_URL": service.url, "ROUSE_PUSHD_TOKEN": service.token],
                defines: ["ROUSE_PUSHD"])
            try await lab.storeToken(tokens[(topics[.python] ?? "") + ".voip"] ?? "")
            let viaPushd = try await lab.calls(
                "s1-pushd", count: options.calls, period: .milliseconds(options.periodMs))
            let times = viaPushd.answeredMilliseconds
            failures += viaPushd.attempted - times.count
            let oneShot = SIPCallRun(
                tag: "s1", attempted: total, answeredMilliseconds: woken[.python] ?? [], sippStatus: 0, sippOutput: "")
            report(
                "S1 push-woken, python handler, push via rouse-pushd (http_client → pushd → gateway)", viaPushd.summary)
            report(
                "ratio S1 (python, pushd)/S0",
                String(
                    format: "p50 %.1f×, p95 %.1f×", viaPushd.quantile(0.5) / s0.quantile(0.5),
                    viaPushd.quantile(0.95) / s0.quantile(0.95)))
            report(
                "S1 (python): rouse-pushd instead of one-shot rouse send",
                String(
                    format: "p50 %.1f → %.1f ms (%.1f ms less), p95 %.1f → %.1f ms", oneShot.quantile(0.5),
                    viaPushd.quantile(0.5), oneShot.quantile(0.5) - viaPushd.quantile(0.5), oneShot.quantile(0.95),
                    viaPushd.quantile(0.95)))
            json["s1-python-pushd"] = [
                "p50": viaPushd.quantile(0.5), "p95": viaPushd.quantile(0.95), "max": times.max() ?? 0,
                "answered": times.count,
            ]
        }
        if options.s2 {
            let s2 = try await Self.socketWoken(
                lab: lab, agent: agent.processIdentifier, socket: socket, log: directory + "/s2.jsonl",
                calls: options.calls,
                idleSeconds: options.idleSeconds, status: status)
            let times = s2.run.answeredMilliseconds
            failures += s2.run.attempted - times.count
            report("S2 socket-woken, Python handler (INVITE on the frozen phone's watched TCP socket)", s2.run.summary)
            report(
                "ratio S2/S0",
                String(
                    format: "p50 %.1f×, p95 %.1f×, max %.1f×", s2.run.quantile(0.5) / s0.quantile(0.5),
                    s2.run.quantile(0.95) / s0.quantile(0.95), (times.max() ?? .nan) / (awake.max() ?? .nan)))
            report("S2 calls that found the phone frozen (agent socket wakes)", "\(s2.wakes)/\(options.calls)")
            report(
                "agent idle wake-ups holding the frozen registered S2 phone",
                String(
                    format: "%.1f/min over %d s (still registered: %@)", s2.idleWakeUpsPerMinute, s2.idleSeconds,
                    s2.registeredAfterIdle ? "yes" : "no"))
            report(
                "  of which beyond the keep-alive",
                String(
                    format: "%.1f/min (%d keep-alive re-REGISTERs with %d wake-ups within %.0f s of them left out)",
                    s2.idleWakeUpsBeyondKeepAlivePerMinute, s2.keepAlives, s2.keepAliveWakeUps,
                    Double(Self.keepAliveMargin) / 1000))
            report(
                "  beyond the keep-alive, by thread",
                s2.beyondByThread.isEmpty
                    ? "none" : s2.beyondByThread.map { "\($0.name) \($0.count)" }.joined(separator: ", "))
            report(
                "  beyond the keep-alive, when (s into the window × wake-ups)",
                s2.beyondAt.isEmpty
                    ? "none"
                    : s2.beyondAt.map { String(format: "%.1f×%d", $0.seconds, $0.count) }.joined(separator: ", "))
            json["s2"] = [
                "p50": s2.run.quantile(0.5), "p95": s2.run.quantile(0.95), "max": times.max() ?? 0,
                "answered": times.count, "wakes": s2.wakes, "idleWakeUpsPerMinute": s2.idleWakeUpsPerMinute,
                "idleWakeUpsBeyondKeepAlivePerMinute": s2.idleWakeUpsBeyondKeepAlivePerMinute,
                "keepAlives": s2.keepAlives, "keepAliveWakeUps": s2.keepAliveWakeUps,
                "registeredAfterIdle": s2.registeredAfterIdle,
            ]
        }
        let allHandlers = try await status()?.handlers ?? []
        let allStrikes = allHandlers.filter { $0.name.hasPrefix("phone-") }.map(\.strikes).reduce(0, +)
        json["strikes"] = allStrikes
        json["notAnswered"] = failures
        report("calls not answered", "\(failures)")
        report("strikes", "\(allStrikes)")
        report("load average", SendFloorBench.loadAverage())
        if options.json {
            let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        }
        if failures > 0 || allStrikes != 0 {
            throw GatewayBench.BenchError(description: "\(failures) calls not answered, \(allStrikes) strikes")
        }
    }
}
