import Foundation
import RouseChildProcess
import RouseClock
import RouseSystem

/// Real SIP software from Debian on loopback, for the end-to-end test and `rouse-bench sip`: Kamailio as registrar
/// and proxy running the committed `deploy/sip/kamailio-rouse-push.cfg`, baresip (headless, auto-answer, a sine
/// source, ALSA's null sink) as the softphone, SIPp as the caller (`deploy/sip/sipp-uac.xml`). Everything lives in
/// `directory`; ports are picked free on 127.0.0.1. The caller stops what it starts (the returned children).
package struct SIPLab: Sendable {
    /// The SIP programs, from Debian's packages kamailio, baresip-core and sip-tester.
    package static let kamailio = "/usr/sbin/kamailio"
    package static let kamcmd = "/usr/sbin/kamcmd"
    package static let baresip = "/usr/bin/baresip"
    package static let sipp = "/usr/bin/sipp"

    /// Where the lab's files go.
    package let directory: String
    /// `deploy/sip` (the committed Kamailio fragment, push script, SIPp scenario and SIP handler).
    package let files: String
    /// Kamailio's UDP port.
    package let proxyPort: UInt16
    /// baresip's SIP port.
    package let phonePort: UInt16
    /// baresip's ctrl_tcp port.
    package let controlPort: UInt16
    /// SIPp's port.
    package let callerPort: UInt16
    /// The socket-woken phone's (S2) SIP port (baresip registered over TCP).
    package let tcpPhonePort: UInt16
    /// The S2 handler's local port: baresip's outbound proxy, bridged to the handler's connection to Kamailio.
    package let bridgePort: UInt16
    /// The AOR user of the softphone.
    package let user = "bob"

    /// Kamailio's configuration (the committed fragment included).
    package var kamailioConfig: String { directory + "/kamailio.cfg" }
    /// baresip's configuration directory.
    package var baresipDirectory: String { directory + "/baresip" }
    /// Kamailio's binrpc socket (kamcmd).
    package var controlSocket: String { directory + "/kamailio.ctl" }
    /// Kamailio's log (stderr).
    package var kamailioLog: String { directory + "/kamailio.log" }
    /// Where `rouse-sip-push` appends `rouse send --json`'s outcomes.
    package var pushLog: String { directory + "/push.jsonl" }

    /// Fails with the reason when a program is missing (deploy/install-deps.sh installs them).
    package static func requireTools() throws {
        for tool in [kamailio, kamcmd, baresip, sipp, "/usr/bin/python3"] { try ChildProcess.require(tool) }
    }

    /// A lab in `directory` (created) using the files in `files`; writes Kamailio's and baresip's configurations.
    package init(directory: String, files: String) throws {
        try Self.requireTools()
        self.directory = directory
        self.files = files
        var ports = LoopbackPorts()
        proxyPort = try ports.next()
        phonePort = try ports.nextPair()
        controlPort = try ports.next()
        callerPort = try ports.next()
        tcpPhonePort = try ports.nextPair()
        bridgePort = try ports.next()
        try FileManager.default.createDirectory(atPath: baresipDirectory, withIntermediateDirectories: true)
        let kamailio = """
            #!KAMAILIO
            debug=1
            listen=udp:127.0.0.1:\(proxyPort)
            listen=tcp:127.0.0.1:\(proxyPort)
            include_file "\(files)/kamailio-rouse-push.cfg"
            modparam("ctl", "binrpc", "unix:\(controlSocket)")

            """
        try Data(kamailio.utf8).write(to: URL(fileURLWithPath: kamailioConfig))
        // baresip 1.0.0: `net_interface lo` fails where interface ioctls are unavailable; the address works. ausine
        // produces 48 kHz stereo only: the source is resampled to PCMU's 8 kHz mono.
        let config = """
            sip_listen        127.0.0.1:\(phonePort)
            net_interface     127.0.0.1
            module_path       /usr/lib/baresip/modules
            call_max_calls    1
            audio_player      alsa,null
            audio_alert       alsa,null
            audio_source      ausine,440
            ausrc_srate       48000
            ausrc_channels    2
            module            g711.so
            module            alsa.so
            module            ausine.so
            module_tmp        account.so
            module_app        ctrl_tcp.so
            ctrl_tcp_listen   127.0.0.1:\(controlPort)

            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: baresipDirectory + "/config"))
        let account =
            "<sip:\(user)@127.0.0.1:\(proxyPort);transport=udp>;answermode=auto;regint=300;audio_codecs=PCMU\n"
        try Data(account.utf8).write(to: URL(fileURLWithPath: baresipDirectory + "/accounts"))
        try Data().write(to: URL(fileURLWithPath: baresipDirectory + "/contacts"))
        try writeSocketWokenPhone(config: config)
    }

    /// Starts Kamailio (foreground, logging to ``kamailioLog``) with `environment` added to ours (the push settings:
    /// ``pushEnvironment(rouse:providerPort:certs:topic:)``); returns once its control socket answers.
    /// `defines`: names defined for the configuration (`kamailio -A`), e.g. `ROUSE_PUSHD`.
    package func startKamailio(environment: [String: String], defines: [String] = []) async throws -> RunningChild {
        let child = try ChildProcess.start(
            Self.kamailio,
            ["-DD", "-E", "-m", "32", "-M", "8", "-Y", directory, "-w", directory, "-f", kamailioConfig]
                + defines.flatMap { ["-A", $0] },
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            stderr: .file(kamailioLog))
        let deadline = SystemClock().now.advanced(by: .seconds(20))
        while SystemClock().now < deadline {
            if child.isRunning == false { break }
            if (try? await kamcmd(["core.version"]))?.contains("kamailio") == true { return child }
            try await Task.sleep(for: .milliseconds(50))
        }
        child.kill()
        let log = (try? String(contentsOfFile: kamailioLog, encoding: .utf8)) ?? ""
        throw ChildProcess.Failure(description: "kamailio did not start: \(log.suffix(2000))")
    }

    /// The environment `rouse-sip-push` reads (Kamailio passes its own on): `rouse send` at `rouse` to the gateway's
    /// provider port with the test PKI in `certs`.
    package func pushEnvironment(rouse: String, providerPort: UInt16, certs: String, topic: String) -> [String: String]
    {
        [
            "ROUSE_SIP_PUSH": files + "/rouse-sip-push", "ROUSE_BIN": rouse,
            "ROUSE_PUSH_URL": "https://127.0.0.1:\(providerPort)", "ROUSE_TOPIC": topic,
            "ROUSE_CA_FILE": certs + "/ca.pem", "ROUSE_AUTH_KEY": certs + "/apns-key.p8",
            "ROUSE_KEY_ID": "ROUSEKEY01", "ROUSE_TEAM_ID": "ROUSETEAM1", "ROUSE_PUSH_LOG": pushLog,
        ]
    }

    /// Runs `kamcmd` on Kamailio's control socket; its output.
    package func kamcmd(_ arguments: [String]) async throws -> String {
        let output = try await ChildProcess.run(
            Self.kamcmd, ["-s", "unix:" + controlSocket] + arguments, timeout: .seconds(10))
        guard output.status == 0 else {
            throw ChildProcess.Failure(description: "kamcmd \(arguments.joined(separator: " ")): \(output.stderr)")
        }
        return output.stdout
    }

    /// Hands the softphone's VoIP push token to the proxy (as an app uploads its PushKit token to its server).
    /// `topic`: the app's bundle id when it is not the push script's default (`ROUSE_TOPIC`).
    package func storeToken(_ token: String, topic: String? = nil) async throws {
        _ = try await kamcmd(["htable.sets", "pn", user, token])
        if let topic { _ = try await kamcmd(["htable.sets", "pt", user, topic]) }
    }

    /// Whether the softphone has a binding in Kamailio's location table.
    package func registered() async throws -> Bool {
        try await kamcmd(["ul.dump"]).contains("AoR: \(user)")
    }

    /// The SIP handler the agent launches: `deploy/sip/rouse-sip-handler.py` on the Python library at `pythonPath`,
    /// or `deploy/sip/rouse-sip-handler.c` built on librouse-handler (``buildCHandler(clients:)``).
    package enum Handler: String, Sendable, CaseIterable {
        case python, c
    }

    /// Builds librouse-handler.so.0 (`clients/c` with `make`) and `deploy/sip/rouse-sip-handler.c` with the system
    /// `cc` into the lab's directory; the handler's path.
    package func buildCHandler(clients: String) async throws -> String {
        let out = directory + "/c"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let make = try await ChildProcess.run(
            "/usr/bin/make", ["-s", "-C", clients + "/c", "OUT=" + out], timeout: .seconds(120))
        guard make.status == 0 else { throw ChildProcess.Failure(description: "make clients/c: \(make.stderr)") }
        let handler = out + "/rouse-sip-handler"
        let cc = try await ChildProcess.run(
            "/usr/bin/cc",
            [
                "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", clients + "/c", "-o", handler,
                files + "/rouse-sip-handler.c", "-L", out, "-lrouse-handler", "-Wl,-rpath," + out,
            ], timeout: .seconds(120))
        guard cc.status == 0 else { throw ChildProcess.Failure(description: "cc rouse-sip-handler.c: \(cc.stderr)") }
        return handler
    }

    /// The handler file (`handlers.d/NAME.toml`) for `handler` (`clients`: the repository's `clients/` directory),
    /// logging JSON lines to `log`.
    package func handlerFile(
        _ handler: Handler, topic: String, clients: String, log: String, name: String = "phone"
    ) async throws -> String {
        let command: [String]
        var environment = ""
        switch handler {
        case .python:
            command = [
                "/usr/bin/python3", files + "/rouse-sip-handler.py", "--name", name, "--baresip", Self.baresip,
                "--baresip-config", baresipDirectory, "--ctrl", "127.0.0.1:\(controlPort)", "--log", log,
            ]
            environment = "environment = [\"PYTHONPATH=\(clients)/python\"]\n"
        case .c:
            command = [
                try await buildCHandler(clients: clients), name, Self.baresip, baresipDirectory, "\(controlPort)", log,
            ]
        }
        return """
            topic = "\(topic)"
            command = [\(command.map { "\"\($0)\"" }.joined(separator: ", "))]
            push-types = ["voip"]
            allow-root = true
            \(environment)
            """
    }

    /// Starts baresip on the lab's configuration (the awake softphone of S0), its log (stdout, line-buffered by
    /// `stdbuf`: a failing test quotes it while baresip still runs) in `baresip-s0.log`, its stderr beside it.
    package func startBaresip() throws -> RunningChild {
        try ChildProcess.require(Self.baresip)
        return try ChildProcess.start(
            "/usr/bin/stdbuf", ["-oL", "-eL", Self.baresip, "-f", baresipDirectory],
            stdout: .file(directory + "/baresip-s0.log"), stderr: .file(directory + "/baresip-s0.stderr"))
    }

    /// Waits until `condition` holds, polling every 20 ms, at most `timeout`.
    package static func until(
        _ what: String, timeout: Duration = .seconds(10), _ condition: () async throws -> Bool
    ) async throws {
        let deadline = SystemClock().now.advanced(by: timeout)
        while SystemClock().now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        if try await condition() { return }
        throw ChildProcess.Failure(description: "timed out after \(timeout) waiting for: \(what)")
    }

    /// `count` calls from SIPp to the softphone, one at a time, started `period` apart (or as soon as the previous
    /// one ended), each held `hold` after its 200 OK; the INVITE → 200 OK time of each answered call. `callee`: the
    /// AOR user called (default: baresip's ``user``).
    package func calls(
        _ tag: String, count: Int, period: Duration, hold: Duration = .milliseconds(200), callee: String? = nil
    ) async throws -> SIPCallRun {
        try await Self.calls(
            tag, count: count, period: period, hold: hold, scenario: files + "/sipp-uac.xml", to: callee ?? user,
            at: proxyPort, from: callerPort, directory: directory)
    }

    /// `count` calls from SIPp running `scenario` (`deploy/sip/sipp-uac.xml`) on 127.0.0.1:`callerPort` to
    /// `callee` through 127.0.0.1:`port`, as ``calls(_:count:period:hold:callee:)`` places them; its logs go to
    /// `directory`.
    package static func calls(
        _ tag: String, count: Int, period: Duration, hold: Duration, scenario: String, to callee: String,
        at port: UInt16, from callerPort: UInt16, directory: String
    ) async throws -> SIPCallRun {
        let log = "\(directory)/sipp-\(tag).log"
        // SIPp's unexpected messages, whole: what a failed call got instead of its answer (quoted with the output).
        let errors = "\(directory)/sipp-\(tag)-errors.log"
        let periodMs = max(
            1, Int(period.components.seconds * 1000 + period.components.attoseconds / 1_000_000_000_000_000))
        let holdMs = Int(hold.components.seconds * 1000 + hold.components.attoseconds / 1_000_000_000_000_000)
        let output = try await ChildProcess.run(
            sipp,
            [
                "-sf", scenario, "-s", callee, "-i", "127.0.0.1", "-p", "\(callerPort)",
                "-m", "\(count)", "-l", "1", "-r", "1", "-rp", "\(periodMs)", "-d", "\(holdMs)", "-trace_logs",
                "-log_file", log, "-trace_err", "-error_file", errors, "-recv_timeout", "20000", "-timeout",
                "\(count * (periodMs / 1000 + 25))",
                "-nostdin", "127.0.0.1:\(port)",
            ], timeout: .seconds(Int64(count * (periodMs / 1000 + 30))))
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        let answered = lines.compactMap { line -> Double? in
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == "answered", let micros = Double(fields[2]) else { return nil }
            return micros / 1000
        }
        return SIPCallRun(
            tag: tag, attempted: count, answeredMilliseconds: answered, sippStatus: output.status,
            sippOutput: String(output.stdout.suffix(3000))
                + (output.status == 0
                    ? ""
                    : "\nSIPp errors:\n"
                        + String(((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").suffix(4000))))
    }
}

/// Free ports on 127.0.0.1 for SIP programs that bind the port they are given, none handed out twice.
package struct LoopbackPorts: Sendable {
    private var taken: Set<UInt16> = []
    // Ports below the kernel's ephemeral range (`ip_local_port_range`, 32768-60999 by default) when it leaves
    // room: a port from that range can become any outgoing connection's source port, or another test's
    // `bind(0)`, between this check and the program's own bind (seen: baresip's "SIP Transport failed: Address
    // already in use" while other tests ran). Below it only an explicit bind can take it.
    private let ephemeralLow =
        Sys.readText("/proc/sys/net/ipv4/ip_local_port_range")?.split(whereSeparator: \.isWhitespace).first
        .flatMap { Int($0) } ?? 0

    package init() {}

    /// A port free a moment ago for TCP and UDP.
    package mutating func next() throws -> UInt16 {
        while true {
            let candidate =
                ephemeralLow > 12_000
                ? UInt16(Int.random(in: 10_000..<(ephemeralLow - 1))) : try Sys.freeLoopbackPort()
            guard ephemeralLow <= 12_000 || Sys.loopbackPortIsFree(candidate) else { continue }
            if taken.insert(candidate).inserted { return candidate }
        }
    }

    /// A port with the next one free too: baresip 1.0 also listens for SIP over TLS on its port + 1 (it has no
    /// setting to turn that off), and fails to start when another test holds that port ("SIP/TLS transport
    /// failed: Address already in use").
    package mutating func nextPair() throws -> UInt16 {
        while true {
            let candidate = try next()
            guard candidate < UInt16.max, !taken.contains(candidate + 1), Sys.loopbackPortIsFree(candidate + 1)
            else { continue }
            taken.insert(candidate + 1)
            return candidate
        }
    }
}

extension SIPLab {
    /// Where a push-woken call's time goes, per call (milliseconds, medians over the calls): from the proxy
    /// suspending the INVITE to the push script running (`exec` forks a shell), to the handler registered with the
    /// agent (`rouse send` → gateway → agent → launch → Python start), to its `reportCall`, to baresip's REGISTER at
    /// the proxy. From Kamailio's `rouse PUSH`/`rouse WOKEN` lines and the handler's JSON log (`sentAt` is the
    /// script's clock reading), matched in order (calls are placed one at a time).
    /// `skip`: the proxy's PUSH and WOKEN lines of earlier calls (another handler's) to pass over.
    package func stages(handlerLog: String, skip: Int = 0) -> [(String, Double)] {
        func seconds(_ marker: String) -> [Double] {
            ((try? String(contentsOfFile: kamailioLog, encoding: .utf8)) ?? "").split(separator: "\n")
                .filter { $0.contains(marker) }
                .compactMap { line in
                    line.split(separator: " ").last { $0.hasPrefix("t=") }.flatMap { Double($0.dropFirst(2)) }
                }
        }
        let pushed = seconds("rouse PUSH ").dropFirst(skip).map { $0 * 1000 }
        let woken = seconds("rouse WOKEN ").dropFirst(skip).map { $0 * 1000 }
        let events = ((try? String(contentsOfFile: handlerLog, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        func times(_ event: String, _ member: String = "t") -> [Double] {
            events.filter { $0["event"] as? String == event }.compactMap { ($0[member] as? NSNumber)?.doubleValue }
        }
        let sent = times("reported", "sentAt")
        let registered = times("registered")
        let reported = times("reported")
        let count = [pushed.count, woken.count, sent.count, registered.count, reported.count].min() ?? 0
        guard count > 0 else { return [] }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func stage(_ from: [Double], _ to: [Double]) -> Double { median((0..<count).map { to[$0] - from[$0] }) }
        return [
            ("INVITE suspended → push script running", stage(pushed, sent)),
            (
                "push script → handler registered (rouse send, gateway, agent, launch, start-up)",
                stage(sent, registered)
            ),
            ("handler registered → reportCall sent", stage(registered, reported)),
            ("reportCall → baresip's REGISTER at the proxy", stage(reported, woken)),
        ]
    }
}

/// What one SIPp run measured.
package struct SIPCallRun: Sendable {
    /// Which scenario.
    package let tag: String
    /// Calls placed.
    package let attempted: Int
    /// INVITE → 200 OK of each answered call, in milliseconds, in call order.
    package let answeredMilliseconds: [Double]
    /// SIPp's exit status (0: every call succeeded).
    package let sippStatus: Int32
    /// The end of SIPp's screen, for a failure's message.
    package let sippOutput: String

    /// A run's figures.
    package init(tag: String, attempted: Int, answeredMilliseconds: [Double], sippStatus: Int32, sippOutput: String) {
        self.tag = tag
        self.attempted = attempted
        self.answeredMilliseconds = answeredMilliseconds
        self.sippStatus = sippStatus
        self.sippOutput = sippOutput
    }

    /// The `q` quantile (0…1, nearest rank) of the answer times.
    package func quantile(_ q: Double) -> Double {
        let sorted = answeredMilliseconds.sorted()
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((q * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }

    /// `p50 … p95 … max` in milliseconds.
    package var summary: String {
        String(
            format: "%d/%d answered, INVITE→200 p50 %.1f ms, p95 %.1f ms, max %.1f ms", answeredMilliseconds.count,
            attempted, quantile(0.5), quantile(0.95), answeredMilliseconds.max() ?? .nan)
    }
}
