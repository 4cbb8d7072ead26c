import ArgumentParser
import FoundationEssentials
import Logging
import RouseAPNs
import RouseDaemon
import RouseSender
import RouseSystem

/// `rouse send`: send VoIP, background or alert pushes to APNs (or anything speaking its protocol).
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send pushes to APNs, rouse mock-apns or rouse-gateway.",
        discussion: """
            Credentials can also come from the environment (ROUSE_APNS_AUTH_KEY, ROUSE_APNS_KEY_ID, ROUSE_APNS_TEAM_ID,
            ROUSE_APNS_CERT, ROUSE_APNS_KEY, ROUSE_APNS_CERT_PASSWORD, ROUSE_APNS_ENV, ROUSE_APNS_CA_FILE, ROUSE_APNS_TOPIC)
            or from a config file (--config, default ~/.config/rouse/send.conf) with `name = value` lines using the
            long option names (auth-key, key-id, team-id, cert, key, password, env, ca-file, topic), so keys never
            land in shell history. Command-line options win over the environment, which wins over the file.

            Exit status: 0 all delivered, 1 some rejected (none failed), 2 some failed without an answer
            (transport), 64 usage or credential error.
            """
    )

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case voip, background, alert
    }

    @Argument(help: "Push type: voip, background or alert.")
    var kind: Kind

    @Option(name: .customLong("token"), help: "Device token in hex (repeat for several).")
    var tokens: [String] = []
    @Option(name: .customLong("tokens-file"), help: "File with one hex device token per line.")
    var tokensFile: String?
    @Option(help: "Bundle ID (the push type's suffix, e.g. .voip, is added when missing).")
    var topic: String?
    @Option(help: "JSON payload, or @FILE to read it from a file.")
    var payload: String?
    @Option(help: "apns-priority: 10, 5 or 1.")
    var priority: Int?
    @Option(help: "apns-expiration in UNIX seconds (VoIP default: 0, deliver now or never).")
    var expiration: Int64?
    @Option(name: .customLong("collapse-id"), help: "apns-collapse-id (at most 64 bytes).")
    var collapseID: String?
    @Option(name: .customLong("apns-id"), help: "apns-id (UUID) for a single push; generated when absent.")
    var apnsID: String?
    @Option(help: "sandbox, production, or an https://host:port URL.")
    var env: String?
    @Option(name: .customLong("ca-file"), help: "CA bundle to verify the server (default: the system store).")
    var caFile: String?
    @Option(name: .customLong("auth-key"), help: "Token auth: the .p8 key file.")
    var authKey: String?
    @Option(name: .customLong("key-id"), help: "Token auth: the 10-character key ID.")
    var keyID: String?
    @Option(name: .customLong("team-id"), help: "Token auth: the 10-character team ID.")
    var teamID: String?
    @Option(help: "Certificate auth: PEM certificate, or a PKCS#12 bundle (.p12/.pfx).")
    var cert: String?
    @Option(help: "Certificate auth: PEM private key (when not in --cert).")
    var key: String?
    @Option(help: "Certificate auth: PKCS#12 password.")
    var password: String?
    @Option(help: "Transport: native (default) or curl.")
    var transport = "native"
    @Option(help: "curl transport: proxy URL (http://, https://, socks5h://); default: https_proxy/no_proxy.")
    var proxy: String?
    @Option(help: "HTTP/2 connections.")
    var connections = 1
    @Option(help: "Pushes in flight at most.")
    var concurrency = 2000
    @Option(help: "Seconds each push may take until its outcome.")
    var deadline = 30.0
    @Option(name: .customLong("prune-file"), help: "Write tokens the backend should delete (token, reason, timestamp).")
    var pruneFile: String?
    @Option(help: "Config file with credentials (name = value lines).")
    var config: String?
    @Option(
        help: "Send through rouse-pushd's API socket instead of connecting to APNs (credentials are the service's).")
    var via: String?
    @Option(help: "With --via: the service's app name (default: the app whose topic is --topic).")
    var app: String?
    @Flag(help: "One JSON line per push, then a summary line.")
    var json = false
    @Flag(help: "No progress bar.")
    var quiet = false

    func run() async throws {
        do {
            try await send()
        } catch let error as SendUsageError {
            Sys.writeStandardError("rouse send: \(error.message)\n")
            throw ExitCode(64)
        }
    }

    private func send() async throws {
        let settings = try SendSettings(command: self)
        if let via {
            try await SendVia(command: self, settings: settings, socket: via).run()
            return
        }
        RouseLogging.bootstrap(level: .error)
        let sender: APNsSender
        do {
            sender = try APNsSender(configuration: settings.configuration)
        } catch {
            throw SendUsageError(message: "\(error)")
        }
        let report = SendReport(total: settings.tokens.count, json: json)
        let progress =
            !json && !quiet && settings.tokens.count > 1 && Sys.isTerminal(2) ? ProgressBar(report: report) : nil
        progress?.start()
        let template = settings.push
        let tokens = settings.tokens
        await sender.sendAll(count: tokens.count, maxInFlight: max(1, concurrency)) { index in
            var push = template
            push.deviceToken = tokens[index]
            return push
        } onResult: {
            report.add($0)
        }
        progress?.stop()
        await sender.shutdown()
        report.printSummary()
        if let pruneFile {
            do {
                try report.pruneLines().write(toFile: pruneFile, atomically: true, encoding: .utf8)
            } catch {
                throw SendUsageError(message: "cannot write \(pruneFile): \(error)")
            }
        }
        let code = report.exitCode
        if code != 0 { throw ExitCode(code) }
    }
}

/// A usage or credential problem: one line on stderr, exit 64.
struct SendUsageError: Error {
    let message: String
}
