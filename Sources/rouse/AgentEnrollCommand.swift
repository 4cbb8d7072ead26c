import ArgumentParser
import FoundationEssentials
import Logging
import RouseAgent
import RouseAgentCore
import RouseState
import RouseSystem
import RouseText

extension AgentCommand {
    /// `rouse agent enroll --gateway URL --ca FILE --secret-file FILE`: the first-run command of a device. Creates
    /// the agent's data key in the form its unit loads (a systemd credential when `systemd-creds` works, else a
    /// 0600 key file), enrolls with the gateway, stores the sealed credential where `rouse-agent` reads it, and
    /// writes the unit's drop-in (the gateway's URL and CA), so `systemctl enable --now rouse-agent` works next.
    /// With `--user`, the same for the per-user mode, run as the user: the user unit
    /// (`/usr/lib/systemd/user/rouse-agent.service`), the XDG directories `rouse-agent --user` reads, a key file
    /// (systemd 252 has no user credentials) and a drop-in in `~/.config/systemd/user`.
    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enroll",
            abstract: "Enroll this device with a gateway and configure the rouse-agent unit (first run).",
            discussion: """
                Defaults come from the installed unit's command line (--state-dir, --handlers). The drop-in \
                replaces the unit's ExecStart with the same command plus --gateway and --ca; with a key file \
                (no systemd credentials) it also drops the unit's LoadCredentialEncrypted=. With --user (run as the \
                user, per-user mode): the user unit, state in $XDG_STATE_HOME/rouse, a key file, the CA and the \
                drop-in under $XDG_CONFIG_HOME; next is systemctl --user enable --now rouse-agent.
                """)

        @Option(help: "The gateway's device API, e.g. https://gateway.example:2198.") var gateway: String
        @Option(help: "CA (or self-signed certificate) of the gateway's TLS certificate; omit for the system store.")
        var ca: String?
        @Option(
            help: "File holding the one-time enrollment secret (rouse gateway devices enroll-secret); - reads stdin.")
        var secretFile: String?
        @Option(
            help: ArgumentHelp(
                "The one-time enrollment secret itself. Unsafe: other local users see it in the process list; use "
                    + "--secret-file."))
        var secret: String?
        @Option(help: "Device certificate (PEM), for gateways that enroll devices by certificate.")
        var deviceCert: String?
        @Option(help: "Its private key (PEM).") var deviceKey: String?
        @Option(help: "The agent's state directory (default: the unit's --state-dir, else /var/lib/rouse).")
        var stateDir: String?
        @Option(help: "Data key directory (default: <state-dir>/keys).") var keyDir: String?
        @Option(help: "Data key backend: auto, systemd-credential or key-file (--user: key-file).")
        var keyBackend = "auto"
        @Option(
            help: ArgumentHelp(
                "Where the gateway's CA is copied, readable by the service (default /etc/rouse/gateway-ca.pem; "
                    + "--user: $XDG_CONFIG_HOME/rouse/gateway-ca.pem)."))
        var caCopy: String?
        @Option(help: "The agent unit whose command line the drop-in extends (default: the installed one).")
        var unit: String?
        @Option(
            help: ArgumentHelp(
                "Directory of the unit's drop-in (default /etc/systemd/system/rouse-agent.service.d; --user: "
                    + "$XDG_CONFIG_HOME/systemd/user/rouse-agent.service.d)."))
        var dropInDir: String?
        @Flag(help: "Per-user mode (run as the user): the user unit rouse-agent --user, XDG directories, a key file.")
        var user = false
        @Flag(help: "Do not write a drop-in (the agent is started by other means).") var noUnit = false
        @Flag(help: "Enroll again although enrolled (the device gets a new identity and new tokens).")
        var force = false

        static let dropInName = "enrollment.conf"
        static let installedUnits = [
            "/etc/systemd/system/rouse-agent.service", "/lib/systemd/system/rouse-agent.service",
            "/usr/lib/systemd/system/rouse-agent.service",
        ]
        /// The user unit, where systemd's user manager looks for it (after the user's own directory).
        static let installedUserUnits = [
            "/etc/systemd/user/rouse-agent.service", "/usr/lib/systemd/user/rouse-agent.service",
        ]

        func validate() throws {
            let secrets = [secretFile, secret].compactMap { $0 }.count
            if (deviceCert == nil) != (deviceKey == nil) {
                throw ValidationError("--device-cert and --device-key go together")
            }
            if secrets > 1 { throw ValidationError("give --secret-file or --secret, not both") }
            if secrets == 0 && deviceCert == nil {
                throw ValidationError(
                    "give --secret-file FILE (from rouse gateway devices enroll-secret) or --device-cert")
            }
            guard gateway.hasPrefix("https://") else { throw ValidationError("--gateway must be an https:// URL") }
            // These values go into the unit's drop-in: a newline there would add a directive of the caller's choice.
            let written: [(String, String?)] = [
                ("--gateway", gateway), ("--ca", ca), ("--device-cert", deviceCert), ("--device-key", deviceKey),
                ("--state-dir", stateDir), ("--key-dir", keyDir), ("--ca-copy", caCopy), ("--unit", unit),
                ("--drop-in-dir", dropInDir),
            ]
            for case (let option, let value?) in written {
                if let offset = Self.controlCharacterOffset(value) {
                    throw ValidationError(
                        "\(option) holds a control character at byte \(offset): not written into a unit")
                }
            }
            guard KeyBackendPreference(rawValue: keyBackend) != nil else {
                throw ValidationError("--key-backend must be auto, systemd-credential or key-file")
            }
            if user && keyBackend == "systemd-credential" {
                throw ValidationError("--user: the data key is a key file (systemd 252 has no user credentials)")
            }
        }

        func run() async throws {
            var logger = Logger(label: "rouse.agent.enroll")
            logger.logLevel = .warning
            let paths = try EnrollPaths(user: user, environment: ProcessInfo.processInfo.environment)
            let units =
                user
                ? [paths.userUnitDirectory + "/rouse-agent.service"] + Self.installedUserUnits : Self.installedUnits
            let unitPath = unit ?? units.first { FileManager.default.fileExists(atPath: $0) }
            var commandLine = try unitPath.map { path -> AgentServiceCommandLine in
                let text = try String(contentsOfFile: path, encoding: .utf8)
                guard let line = AgentServiceCommandLine(unit: text) else {
                    throw ValidationError("\(path): no ExecStart= in [Service]")
                }
                return line
            }
            if commandLine == nil && !noUnit {
                throw ValidationError(
                    "no rouse-agent.service installed\(user ? " as a user unit" : "") (give --unit FILE, or --no-unit)")
            }
            let stateDirectory = stateDir ?? commandLine?.value(of: "--state-dir") ?? paths.state
            let keyDirectory = keyDir ?? commandLine?.value(of: "--key-dir") ?? stateDirectory + "/keys"

            var caPath = ca
            if let ca {
                guard FileManager.default.isReadableFile(atPath: ca) else {
                    throw ValidationError("--ca: cannot read \(ca)")
                }
                caPath = try copyCA(ca, to: caCopy ?? paths.caCopy)
            }
            let enrollmentSecret = try secret ?? secretFile.map(Self.readSecret)

            let persistence: AgentPersistence
            do {
                persistence = try AgentPersistence(
                    stateDirectory: stateDirectory, keyDirectory: keyDirectory,
                    preference: user ? .keyFile : KeyBackendPreference(rawValue: keyBackend) ?? .auto, logger: logger)
            } catch {
                throw ValidationError("state key in \(keyDirectory): \(error)")
            }
            let store = SealedAgentStateStore(store: persistence.secrets, legacyPath: nil, logger: logger)
            let existing = try store.load()
            if let device = existing.deviceID, !force {
                throw ValidationError(
                    "already enrolled as device \(device) (state in \(stateDirectory)); --force enrolls again as a new device"
                )
            }

            let (deviceID, credential) = try await enroll(caFile: caPath, secret: enrollmentSecret)
            var state = AgentState()
            state.deviceID = deviceID
            state.credential = credential
            try store.save(state)

            var lines = [
                "enrolled with \(gateway) as device \(deviceID)",
                "state key: \(persistence.backend.rawValue) in \(keyDirectory); credential sealed in \(stateDirectory)/secrets",
            ]
            if var line = commandLine, !noUnit {
                line.remove("--enroll-secret")
                line.remove("--enroll-secret-file")
                line.set("--gateway", gateway)
                if let caPath { line.set("--ca", caPath) } else { line.remove("--ca") }
                if let deviceCert, let deviceKey {
                    line.set("--device-cert", Self.absolute(deviceCert))
                    line.set("--device-key", Self.absolute(deviceKey))
                }
                // The per-user agent finds its state under $HOME as the user manager runs it (which sets no
                // XDG_STATE_HOME): a state directory elsewhere is named on its command line.
                if stateDir != nil || (user && stateDirectory != paths.unitState) {
                    line.set("--state-dir", stateDirectory)
                }
                if keyDir != nil { line.set("--key-dir", keyDirectory) }
                commandLine = line
                let handlers = line.value(of: "--handlers") ?? paths.handlers
                try FileManager.default.createDirectory(atPath: handlers, withIntermediateDirectories: true)
                let path = try writeDropIn(
                    line, backend: persistence.backend, directory: dropInDir ?? paths.dropInDirectory)
                lines.append("unit configured: \(path)")
                lines.append("")
                lines.append("Next:")
                if user {
                    lines.append(
                        "  rouse agent handlers add NAME --directory \(handlers) --topic BUNDLE-ID --command /path/to/handler [ARGS…]"
                    )
                    lines.append(
                        "  systemctl --user enable --now rouse-agent   (logs: journalctl --user -u rouse-agent)")
                    lines.append("  rouse agent status --socket \(paths.socket)")
                } else {
                    lines.append("  rouse agent handlers add NAME --topic BUNDLE-ID --command /path/to/handler [ARGS…]")
                    lines.append("  systemctl enable --now rouse-agent   (logs: journalctl -u rouse-agent)")
                    lines.append("  rouse agent status")
                }
            }
            if let secretFile { lines.append("the secret in \(secretFile) is used up: delete it (rm \(secretFile))") }
            print(lines.joined(separator: "\n"))
        }

        /// One request to the gateway's device API (the agent's own: `GatewayEndpoint.enroll`); the gateway answers
        /// 201 with the device id and credential.
        func enroll(caFile: String?, secret: String?) async throws -> (String, String?) {
            var endpoint = GatewayEndpoint(baseURL: gateway, caFile: caFile)
            if let deviceCert, let deviceKey { endpoint.clientCertificate = (deviceCert, deviceKey) }
            do {
                return try await endpoint.enroll(secret: secret)
            } catch let error as AgentError {
                throw ValidationError("the gateway refused: \(error.detail)")
            } catch {
                throw ValidationError("cannot reach \(gateway): \(error)")
            }
        }

        func copyCA(_ path: String, to copy: String) throws -> String {
            let source = Self.absolute(path)
            let target = Self.absolute(copy)
            guard source != target else { return target }
            let data = try Data(contentsOf: URL(fileURLWithPath: source))
            try FileManager.default.createDirectory(
                atPath: URL(fileURLWithPath: target).deletingLastPathComponent().path, withIntermediateDirectories: true
            )
            try data.write(to: URL(fileURLWithPath: target), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: target)
            return target
        }

        func writeDropIn(_ line: AgentServiceCommandLine, backend: KeyBackend, directory: String) throws -> String {
            // Also what came from the environment (XDG directories) and the unit: nothing with a line break is written.
            if let offset = Self.controlCharacterOffset(line.execStart) {
                throw ValidationError(
                    "the agent's command line holds a control character at byte \(offset): not written")
            }
            var text = """
                # Written by `rouse agent enroll`: the gateway this device is enrolled with. Enroll again
                # (rouse agent enroll --force …) rather than editing this file.
                [Service]
                ExecStart=
                ExecStart=\(line.execStart)

                """
            if backend == .keyFile && !user {
                text += """
                    # The data key is a 0600 key file (systemd credentials were unavailable at enrollment).
                    LoadCredentialEncrypted=

                    """
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let path = directory + "/" + Self.dropInName
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            // The manager that runs the unit reads the drop-in again: the system's, or the user's when it runs.
            let manager =
                user
                ? ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].map { $0 + "/systemd/private" }
                : "/run/systemd/system"
            if let manager, FileManager.default.fileExists(atPath: manager),
                let systemctl = ExecutableSearch.find("systemctl")
            {
                _ = try ShortChild.run(systemctl, user ? ["--user", "daemon-reload"] : ["daemon-reload"], input: [])
            }
            return path
        }

        /// The offset of the first control character (below 0x20, or 0x7F) of `value`, nil if it has none.
        static func controlCharacterOffset(_ value: String) -> Int? {
            value.utf8.firstIndex { $0 < 0x20 || $0 == 0x7F }.map {
                value.utf8.distance(from: value.utf8.startIndex, to: $0)
            }
        }

        static func readSecret(_ path: String) throws -> String {
            if path == "-" {
                let data = (try? Sys.readToEnd(0)) ?? []
                return String(decoding: data, as: UTF8.self).trimmingWhitespace()
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--secret-file: cannot read \(path)")
            }
            return String(decoding: data, as: UTF8.self).trimmingWhitespace()
        }

        static func absolute(_ path: String) -> String { URL(fileURLWithPath: path).standardizedFileURL.path }
    }
}

/// Where `rouse agent enroll` writes, by mode: the system service's fixed paths, or the per-user agent's XDG paths
/// (the ones `rouse-agent --user` computes, so the unit finds what enrollment wrote).
struct EnrollPaths {
    var state: String
    /// The state directory `rouse-agent --user` computes under the user manager (only $HOME set).
    var unitState: String
    var handlers: String
    var caCopy: String
    var dropInDirectory: String
    var userUnitDirectory: String
    var socket: String

    init(user: Bool, environment: [String: String]) throws {
        guard user else {
            state = "/var/lib/rouse"
            unitState = state
            handlers = "/etc/rouse/handlers.d"
            caCopy = "/etc/rouse/gateway-ca.pem"
            dropInDirectory = "/etc/systemd/system/rouse-agent.service.d"
            userUnitDirectory = ""
            socket = "/run/rouse/agent.sock"
            return
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else {
            throw ValidationError("--user needs $HOME")
        }
        func directory(_ name: String, _ fallback: String) -> String {
            if let value = environment[name], value.hasPrefix("/") { return value }
            return home + fallback
        }
        let config = directory("XDG_CONFIG_HOME", "/.config")
        state = directory("XDG_STATE_HOME", "/.local/state") + "/rouse"
        unitState = home + "/.local/state/rouse"
        handlers = config + "/rouse/handlers.d"
        caCopy = config + "/rouse/gateway-ca.pem"
        userUnitDirectory = config + "/systemd/user"
        dropInDirectory = userUnitDirectory + "/rouse-agent.service.d"
        socket = (environment["XDG_RUNTIME_DIR"] ?? "$XDG_RUNTIME_DIR") + "/rouse/agent.sock"
    }
}
