import Foundation
import RouseTestSupport
import Testing

/// The first-run commands and the CLI's manners, with the built products as an operator runs them: `--version`,
/// a closed output pipe, `rouse gateway init` → a running `rouse-gateway` → `rouse agent enroll` → `rouse-agent`
/// started with the drop-in's command line, and `rouse agent handlers add|check`. (deploy/package-test.sh runs
/// the same path again from the Debian packages in a clean root.)
@Suite("First-run commands", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct FirstRunTests {
    @Test func everyBinarySaysWhatItWasBuiltFrom() async throws {
        for product in ["rouse", "rouse-gateway", "rouse-agent"] {
            let output = try await ChildProcess.run(try Products.path(product), ["--version"])
            #expect(output.status == 0, "\(product): \(output.stderr)")
            #expect(output.stdout.hasPrefix("development build (no version or commit embedded"), "\(product)")
        }
    }

    @Test func aClosedPipeEndsRouseSendQuietly() async throws {
        let directory = try FirstRun.temporaryDirectory()
        let mock = try ChildProcess.start(
            try Products.path("rouse"),
            [
                "mock-apns", "--listen", "127.0.0.1:0", "--cert", Repository.cert("server.pem"), "--key",
                Repository.cert("server.key"), "--keys", Repository.cert("keys.json"),
            ], stdout: .lines)
        defer { mock.kill() }
        let listening = try #require(await mock.lines.first(timeout: .seconds(20)) { $0.contains("listening on") })
        let port = try #require(listening.split(separator: ":").last.map { String($0.prefix { $0.isNumber }) })
        let tokens = (1...3000).map { String(format: "%064x", $0) }.joined(separator: "\n")
        try Data(tokens.utf8).write(to: URL(fileURLWithPath: directory + "/tokens"))
        let send = [
            try Products.path("rouse"), "send", "voip", "--tokens-file", directory + "/tokens", "--json", "--topic",
            "com.example.rouse", "--env", "https://127.0.0.1:\(port)", "--ca-file", Repository.cert("ca.pem"),
            "--auth-key", Repository.cert("apns-key.p8"), "--key-id", "ROUSEKEY01", "--team-id", "ROUSETEAM1",
        ].map { "'\($0)'" }.joined(separator: " ")
        // bash: the status of `rouse send`, the first command of the pipeline, and what it wrote on stderr.
        let script = "\(send) 2>'\(directory)/stderr' | head -c 1 >/dev/null; echo \"${PIPESTATUS[0]}\""
        let output = try await ChildProcess.run("/bin/bash", ["-c", script], timeout: .seconds(60))
        let stderr = (try? String(contentsOfFile: directory + "/stderr", encoding: .utf8)) ?? ""
        #expect(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "141", "exit: \(output.stdout)")
        #expect(stderr.isEmpty, "stderr: \(stderr.prefix(500))")
    }

    @Test func gatewayInitThenAgentEnrollMakeBothStartable() async throws {
        let directory = try FirstRun.temporaryDirectory()
        let rouse = try Products.path("rouse")
        let config = directory + "/gateway.json"
        let initialized = try await ChildProcess.run(
            rouse,
            [
                "gateway", "init", "--hostname", "127.0.0.1", "--self-signed", "--config", config, "--database",
                directory + "/db/gateway.sqlite", "--tls-dir", directory + "/tls", "--provider-listen", "127.0.0.1:0",
                "--device-listen", "127.0.0.1:0", "--admin", "unix:" + directory + "/admin.sock",
            ])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        #expect(initialized.stdout.contains("rouse gateway keys add --config \(config)"))
        let again = try await ChildProcess.run(
            rouse, ["gateway", "init", "--hostname", "127.0.0.1", "--self-signed", "--config", config])
        #expect(again.status != 0 && again.stderr.contains("exists (--force replaces it)"), "\(again.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/tls/server.key")[.posixPermissions]
        #expect(mode as? Int == 0o600)

        let added = try await ChildProcess.run(
            rouse,
            [
                "gateway", "keys", "add", "--config", config, "--key-id", "ROUSEKEY01", "--team-id", "ROUSETEAM1",
                "--public-key", Repository.cert("apns-key.pub.pem"), "--topic", "com.example.rouse",
            ])
        #expect(added.status == 0, "\(added.stderr)")
        let gateway = try ChildProcess.start(
            try Products.path("rouse-gateway"), ["--config", config, "--log-level", "warning"], stdout: .lines,
            stderr: .file(directory + "/gateway.log"))
        defer { gateway.kill() }
        let ready = try #require(await gateway.lines.first(timeout: .seconds(20)) { $0.contains("ready") })
        let devicePort = try #require(FirstRun.port(of: "device", in: ready))

        // The unit as deploy/package.sh installs it, with this test's directories instead of the system's.
        let unit = try String(contentsOfFile: Repository.root + "/deploy/rouse-agent.service", encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/rouse-agent", with: try Products.path("rouse-agent"))
            .replacingOccurrences(of: "/etc/rouse/handlers.d", with: directory + "/handlers.d")
            .replacingOccurrences(of: "/var/lib/rouse", with: directory + "/state")
            .replacingOccurrences(of: "/run/rouse/agent.sock", with: directory + "/agent.sock")
        try Data(unit.utf8).write(to: URL(fileURLWithPath: directory + "/rouse-agent.service"))
        let secret = try await ChildProcess.run(rouse, ["gateway", "devices", "enroll-secret", "--config", config])
        try Data(secret.stdout.utf8).write(to: URL(fileURLWithPath: directory + "/secret"))
        let enroll = [
            "agent", "enroll", "--gateway", "https://127.0.0.1:\(devicePort)", "--ca", directory + "/tls/server.pem",
            "--secret-file", directory + "/secret", "--ca-copy", directory + "/etc/gateway-ca.pem", "--unit",
            directory + "/rouse-agent.service", "--drop-in-dir", directory + "/dropin", "--key-backend", "key-file",
        ]
        let enrolled = try await ChildProcess.run(rouse, enroll)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let device = try #require(enrolled.stdout.split(separator: "\n").first?.split(separator: " ").last)
        let dropIn = try String(contentsOfFile: directory + "/dropin/enrollment.conf", encoding: .utf8)
        let execStart = try #require(
            dropIn.split(separator: "\n").last { $0.hasPrefix("ExecStart=") && $0.count > "ExecStart=".count })
        #expect(execStart.contains("--gateway https://127.0.0.1:\(devicePort)"))
        #expect(execStart.contains("--ca \(directory)/etc/gateway-ca.pem"))
        #expect(!execStart.contains("--enroll-secret"), "the secret is used up: \(execStart)")
        #expect(dropIn.contains("\nLoadCredentialEncrypted=\n"), "a key file needs no credential: \(dropIn)")
        let keyMode = try FileManager.default.attributesOfItem(atPath: directory + "/state/keys/state.key")
        #expect(keyMode[.posixPermissions] as? Int == 0o600)
        let twice = try await ChildProcess.run(rouse, enroll)
        #expect(twice.status != 0 && twice.stderr.contains("already enrolled as device \(device)"), "\(twice.stderr)")

        let handler = try await ChildProcess.run(
            rouse,
            [
                "agent", "handlers", "add", "example", "--topic", "com.example.rouse", "--directory",
                directory + "/handlers.d", "--command", try Products.path("rouse-example-handler"), "--mode", "report",
            ])
        #expect(handler.status == 0, "\(handler.stderr)")

        // rouse-agent as the unit starts it: enrolled already (no secret), its channel opens.
        let words = execStart.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        let agent = try ChildProcess.start(
            words[0], Array(words.dropFirst()) + ["--log-level", "warning"], stdout: .lines,
            stderr: .file(directory + "/agent.log"))
        defer { agent.kill() }
        #expect(await agent.lines.first(timeout: .seconds(20)) { $0.contains("rouse-agent ready") } != nil)
        let status = try await FirstRun.statusOnceOpen(rouse, socket: directory + "/agent.sock")
        #expect(status.contains("\"channel\":\"open\""), "\(status)")
        #expect(status.contains("\"deviceID\":\"\(device)\""), "\(status)")
        #expect(status.contains("com.example.rouse.voip"), "the handler got no token: \(status)")
    }

    /// The per-user mode: `rouse agent enroll --user` as a user whose state directory is not where the user
    /// manager's agent looks ($XDG_STATE_HOME set in the session, not in the manager), with the user unit in
    /// ~/.config/systemd/user; the drop-in's command line started with only what a user manager gives (HOME,
    /// XDG_RUNTIME_DIR) reaches an open channel as the enrolled device.
    @Test func agentEnrollUserConfiguresThePerUserUnit() async throws {
        let directory = try FirstRun.temporaryDirectory()
        let rouse = try Products.path("rouse")
        let (config, devicePort, gateway) = try await FirstRun.startGateway(in: directory)
        defer { gateway.kill() }
        let home = directory + "/home"
        let runtime = directory + "/run"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        let unit = try String(contentsOfFile: Repository.root + "/deploy/rouse-agent-user.service", encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/rouse-agent", with: try Products.path("rouse-agent"))
        try FileManager.default.createDirectory(
            atPath: home + "/.config/systemd/user", withIntermediateDirectories: true)
        try Data(unit.utf8).write(to: URL(fileURLWithPath: home + "/.config/systemd/user/rouse-agent.service"))
        let secret = try await ChildProcess.run(rouse, ["gateway", "devices", "enroll-secret", "--config", config])
        try Data(secret.stdout.utf8).write(to: URL(fileURLWithPath: directory + "/secret"))
        let session = [
            "PATH=/usr/bin:/bin", "HOME=\(home)", "XDG_RUNTIME_DIR=\(runtime)",
            "XDG_STATE_HOME=\(directory)/xdg-state",
        ]
        let enroll =
            ["-i"] + session + [
                rouse, "agent", "enroll", "--user", "--gateway", "https://127.0.0.1:\(devicePort)", "--ca",
                directory + "/tls/server.pem", "--secret-file", directory + "/secret",
            ]
        let enrolled = try await ChildProcess.run("/usr/bin/env", enroll)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let device = try #require(enrolled.stdout.split(separator: "\n").first?.split(separator: " ").last)
        #expect(enrolled.stdout.contains("systemctl --user enable --now rouse-agent"), "\(enrolled.stdout)")
        #expect(enrolled.stdout.contains("--socket \(runtime)/rouse/agent.sock"), "\(enrolled.stdout)")
        let dropIn = try String(
            contentsOfFile: home + "/.config/systemd/user/rouse-agent.service.d/enrollment.conf", encoding: .utf8)
        let execStart = try #require(
            dropIn.split(separator: "\n").last { $0.hasPrefix("ExecStart=") && $0.count > "ExecStart=".count })
        #expect(execStart.hasPrefix("ExecStart=\(try Products.path("rouse-agent")) --user "), "\(execStart)")
        #expect(execStart.contains("--gateway https://127.0.0.1:\(devicePort)"))
        #expect(execStart.contains("--ca \(home)/.config/rouse/gateway-ca.pem"), "\(execStart)")
        #expect(execStart.contains("--state-dir \(directory)/xdg-state/rouse"), "\(execStart)")
        #expect(!execStart.contains("--enroll-secret"), "the secret is used up: \(execStart)")
        #expect(!dropIn.contains("LoadCredentialEncrypted"), "the user unit loads no credential: \(dropIn)")
        let key = try FileManager.default.attributesOfItem(atPath: directory + "/xdg-state/rouse/keys/state.key")
        #expect(key[.posixPermissions] as? Int == 0o600)
        #expect(FileManager.default.fileExists(atPath: home + "/.config/rouse/handlers.d"))

        // As the user manager starts it: HOME and XDG_RUNTIME_DIR, no XDG_STATE_HOME.
        let words = execStart.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        let agent = try ChildProcess.start(
            words[0], Array(words.dropFirst()) + ["--log-level", "warning"],
            environment: ["PATH": "/usr/bin:/bin", "HOME": home, "XDG_RUNTIME_DIR": runtime], stdout: .lines,
            stderr: .file(directory + "/agent.log"))
        defer { agent.kill() }
        #expect(await agent.lines.first(timeout: .seconds(20)) { $0.contains("rouse-agent ready") } != nil)
        let status = try await FirstRun.statusOnceOpen(rouse, socket: runtime + "/rouse/agent.sock")
        #expect(status.contains("\"channel\":\"open\""), "\(status)")
        #expect(status.contains("\"deviceID\":\"\(device)\""), "not the enrolled device: \(status)")
    }

    @Test func handlerFilesAreWrittenAndCheckedWithTheAgentsParser() async throws {
        let directory = try FirstRun.temporaryDirectory()
        let rouse = try Products.path("rouse")
        let add = [
            "agent", "handlers", "add", "phone", "--topic", "com.example.phone", "--push-type", "voip", "--directory",
            directory, "--command", "/usr/bin/phone handler", "--mode", "a \"quoted\" \\ value",
        ]
        let added = try await ChildProcess.run(rouse, add)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("topics com.example.phone.voip"))
        let checked = try await ChildProcess.run(rouse, ["agent", "handlers", "check", directory])
        #expect(checked.status == 0 && checked.stdout.contains("phone.toml: ok: handler phone"), "\(checked.stdout)")
        let replaced = try await ChildProcess.run(rouse, add)
        #expect(replaced.status != 0 && replaced.stderr.contains("exists (--force replaces it)"))

        let relative = try await ChildProcess.run(
            rouse,
            [
                "agent", "handlers", "add", "bad", "--topic", "com.example.bad", "--directory", directory, "--command",
                "bin/handler",
            ])
        #expect(relative.status != 0 && relative.stderr.contains("command[0] must be an absolute path"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/bad.toml"), "a refused file was written")

        try Data("topic = \"com.example.x\"\ncommand = [\"/bin/true\"]\n[limts]\nstrikes = 2\n".utf8)
            .write(to: URL(fileURLWithPath: directory + "/typo.toml"))
        let typo = try await ChildProcess.run(rouse, ["agent", "handlers", "check", directory + "/typo.toml"])
        #expect(typo.status == 1)
        #expect(typo.stdout.contains("\(directory)/typo.toml: unknown key limts.strikes"), "\(typo.stdout)")
    }

    /// libpq is loaded when a PostgreSQL store opens (CRousePQ), so a machine without it (libpq5 not installed, or
    /// broken) learns so from the gateway's start, with EX_CONFIG, which the unit does not restart: not a network
    /// error retried every 2 s. The library is made unloadable in a private mount namespace (/dev/null bound over it).
    @Test func aPostgresStoreWithoutLibpqIsAConfigurationError() async throws {
        guard getuid() == 0 else { throw FixtureError("a private mount namespace needs root (uid \(getuid()))") }
        let directory = try FirstRun.temporaryDirectory()
        let config = directory + "/gateway.json"
        let initialized = try await ChildProcess.run(
            try Products.path("rouse"),
            [
                "gateway", "init", "--hostname", "127.0.0.1", "--self-signed", "--config", config, "--database",
                directory + "/db/gateway.sqlite", "--tls-dir", directory + "/tls", "--provider-listen", "127.0.0.1:0",
                "--device-listen", "127.0.0.1:0",
            ])
        try #require(initialized.status == 0, "\(initialized.stderr)")
        let sqlite = try String(contentsOfFile: config, encoding: .utf8)
        let postgres = sqlite.replacingOccurrences(
            of: "\"" + directory + "/db/gateway.sqlite\"", with: "\"postgresql://rouse@127.0.0.1:1/rouse\"")
        try #require(postgres != sqlite, "no database path in \(sqlite)")
        try Data(postgres.utf8).write(to: URL(fileURLWithPath: config))
        let libpq = try #require(
            ["/usr/lib/x86_64-linux-gnu/libpq.so.5", "/usr/lib/aarch64-linux-gnu/libpq.so.5"].first {
                FileManager.default.fileExists(atPath: $0)
            }, "libpq.so.5 is not installed here (libpq5)")
        let script = "mount --bind /dev/null \"$1\" && shift && exec \"$@\""
        let gateway = try await ChildProcess.run(
            "/usr/bin/unshare",
            ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", libpq]
                + [try Products.path("rouse-gateway"), "--config", config, "--log-level", "warning"])
        #expect(gateway.status == 78, "status \(gateway.status): \(gateway.stderr)")
        #expect(gateway.stderr.contains("libpq5 is not installed"), "\(gateway.stderr)")
        #expect(!gateway.stderr.contains("cannot connect"), "\(gateway.stderr)")
        // With libpq there, the same configuration is a store not reachable yet (nothing listens on port 1): exit 1,
        // which systemd restarts, as at boot before PostgreSQL is up.
        let unreachable = try await ChildProcess.run(
            try Products.path("rouse-gateway"), ["--config", config, "--log-level", "warning"])
        #expect(unreachable.status == 1, "status \(unreachable.status): \(unreachable.stderr)")
        #expect(unreachable.stderr.contains("cannot connect"), "\(unreachable.stderr)")
    }
}

enum FirstRun {
    /// `rouse gateway init --self-signed` in `directory` (127.0.0.1, free ports), a provider key, and the gateway
    /// started: its configuration file, its device port and the process.
    static func startGateway(in directory: String) async throws -> (String, String, RunningChild) {
        let rouse = try Products.path("rouse")
        let config = directory + "/gateway.json"
        let initialized = try await ChildProcess.run(
            rouse,
            [
                "gateway", "init", "--hostname", "127.0.0.1", "--self-signed", "--config", config, "--database",
                directory + "/db/gateway.sqlite", "--tls-dir", directory + "/tls", "--provider-listen", "127.0.0.1:0",
                "--device-listen", "127.0.0.1:0", "--admin", "unix:" + directory + "/admin.sock",
            ])
        try #require(initialized.status == 0, "\(initialized.stderr)")
        let gateway = try ChildProcess.start(
            try Products.path("rouse-gateway"), ["--config", config, "--log-level", "warning"], stdout: .lines,
            stderr: .file(directory + "/gateway.log"))
        let ready = await gateway.lines.first(timeout: .seconds(20)) { $0.contains("ready") }
        guard let ready, let devicePort = port(of: "device", in: ready) else {
            gateway.kill()
            throw ChildProcess.Failure(description: "rouse-gateway did not get ready: \(ready ?? "no line")")
        }
        return (config, devicePort, gateway)
    }

    /// A new directory, removed when the test ends.
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-first-run-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        TestScope.current?.onEnd { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    /// The port in `name=host:port` of the gateway's ready line.
    static func port(of name: String, in line: String) -> String? {
        line.split(separator: " ").first { $0.hasPrefix(name + "=") }?.split(separator: ":").last.map(String.init)
    }

    /// `rouse agent status --json` until its channel is open (10 s at most); the last answer either way.
    static func statusOnceOpen(_ rouse: String, socket: String) async throws -> String {
        var status = ""
        for _ in 0..<100 {
            status = try await ChildProcess.run(rouse, ["agent", "status", "--json", "--socket", socket]).stdout
            if status.contains("\"channel\":\"open\"") { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return status
    }
}
