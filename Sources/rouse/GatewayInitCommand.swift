import ArgumentParser
import FoundationEssentials
import RouseAPNs
import RouseGateway
import RouseSystem

extension GatewayCommand {
    /// `rouse gateway init --hostname NAME (--cert FILE --key FILE | --self-signed)`: the first-run command of a
    /// gateway. Writes its configuration (token-authenticated providers, devices with bearer credentials, the
    /// admin endpoint on a 0600 Unix socket), creates the database owned by the service user, and prints the
    /// next steps. Checks the result with the gateway's own parser before writing anything.
    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Write a gateway configuration and create its database (first run).",
            discussion: """
                Providers authenticate with ES256 keys (rouse gateway keys add … --topic …), devices with the \
                credential they get from an enrollment secret. The TLS certificate is the operator's (--cert and \
                --key, e.g. from an ACME client) or, for a private deployment, a self-signed one that every device \
                then trusts with rouse agent enroll --ca.
                """)

        @Option(help: "The name (DNS name or IP address) providers and devices use to reach the gateway.")
        var hostname: String
        @Option(help: "TLS certificate chain (PEM) for --hostname.") var cert: String?
        @Option(help: "Its private key (PEM).") var key: String?
        @Flag(help: "Create a self-signed certificate for --hostname (P-256, 825 days) in --tls-dir.")
        var selfSigned = false
        @Option(help: "The configuration file to write.") var config = "/etc/rouse/gateway.json"
        @Option(help: "The SQLite database to create.") var database = "/var/lib/rouse-gateway/gateway.sqlite"
        @Option(help: "Where --self-signed writes server.pem and server.key.") var tlsDir = "/etc/rouse/gateway"
        @Option(help: "Provider API listener (host:port).") var providerListen = "0.0.0.0:2197"
        @Option(help: "Device API listener (host:port).") var deviceListen = "0.0.0.0:2198"
        @Option(help: "Admin endpoint: unix:/path (recommended), or a loopback host:port.")
        var admin = "unix:/run/rouse-gateway/admin.sock"
        @Option(help: "APNs environment the provider credentials must be valid for: production or sandbox.")
        var environment = "production"
        @Option(help: "CA of provider client certificates (omit: token authentication only).") var providerCA: String?
        @Option(help: "With --provider-ca: a bundle ID certificates may push to (repeat), or '*'.")
        var certificateTopic: [String] = []
        @Option(help: "The service user (owner of the database, group of the private key); skipped when absent.")
        var user = "rouse-gateway"
        @Flag(help: "Replace an existing configuration file.") var force = false

        func validate() throws {
            if selfSigned && (cert != nil || key != nil) {
                throw ValidationError("give either --cert and --key or --self-signed")
            }
            if !selfSigned && (cert == nil || key == nil) {
                throw ValidationError("give --cert FILE --key FILE (the operator's certificate) or --self-signed")
            }
            if hostname.isEmpty || hostname.contains(where: { $0 == "/" || $0 == "," || $0.isWhitespace }) {
                throw ValidationError("--hostname: '\(hostname)' is not a host name or an IP address")
            }
            if (providerCA == nil) != certificateTopic.isEmpty {
                throw ValidationError("--provider-ca and --certificate-topic go together")
            }
        }

        func run() async throws {
            let configURL = URL(fileURLWithPath: config).standardizedFileURL
            if FileManager.default.fileExists(atPath: configURL.path) && !force {
                throw ValidationError("\(configURL.path) exists (--force replaces it)")
            }
            var certificate = cert.map(Self.absolute) ?? ""
            var privateKey = key.map(Self.absolute) ?? ""
            if selfSigned {
                (certificate, privateKey) = try SelfSignedCertificate.create(
                    hostname: hostname, directory: Self.absolute(tlsDir), force: force)
            }
            let owner = ServiceUser(name: user)
            var warnings: [String] = []
            if selfSigned {
                try owner?.shareKey(privateKey)
            } else if let owner, !owner.mayRead(privateKey) {
                warnings.append(
                    "warning: the gateway runs as \(owner.name), which may not read \(privateKey): copy the key and "
                        + "certificate to \(tlsDir) (root:\(owner.name), mode 0640; docs/install.md shows an ACME hook)"
                )
            }
            let text = configurationText(certificate: certificate, privateKey: privateKey)
            // The gateway's own parser (the same errors it would give at start).
            do {
                _ = try GatewayConfiguration.parse(
                    data: Data(text.utf8), baseDirectory: configURL.deletingLastPathComponent().path,
                    source: configURL.path)
            } catch {
                throw ValidationError("\(error)")
            }
            let databasePath = Self.absolute(database)
            let databaseDirectory = URL(fileURLWithPath: databasePath).deletingLastPathComponent().path
            if !FileManager.default.fileExists(atPath: databaseDirectory) {
                try FileManager.default.createDirectory(
                    atPath: databaseDirectory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o750])
            }
            _ = try SQLiteGatewayStore(path: databasePath)
            // Pending payloads and device credentials (hashed) are the gateway's alone.
            try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: databasePath)
            try owner?.own([databaseDirectory, databasePath])
            try FileManager.default.createDirectory(
                atPath: configURL.deletingLastPathComponent().path, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: configURL, options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: configURL.path)
            for warning in warnings { Sys.writeStandardError(warning + "\n") }
            print(nextSteps(configPath: configURL.path, databasePath: databasePath, certificate: certificate))
        }

        func configurationText(certificate: String, privateKey: String) -> String {
            func quoted(_ text: String) -> String { JSONText.quoted(text) }
            var provider =
                "{\"listen\": \(quoted(providerListen)), \"certificate\": \(quoted(certificate)), "
                + "\"privateKey\": \(quoted(privateKey))"
            if let providerCA {
                provider +=
                    ", \"clientCA\": \(quoted(Self.absolute(providerCA))), \"certificateTopics\": ["
                    + certificateTopic.map(quoted).joined(separator: ", ") + "]"
            }
            provider += "}"
            return """
                {
                  "environment": \(quoted(environment)),
                  "provider": \(provider),
                  "device": {"listen": \(quoted(deviceListen)), "certificate": \(quoted(certificate)), \
                "privateKey": \(quoted(privateKey))},
                  "admin": {"listen": \(quoted(admin))},
                  "database": \(quoted(Self.absolute(database))),
                  "keys": []
                }

                """
        }

        func nextSteps(configPath: String, databasePath: String, certificate: String) -> String {
            let port = deviceListen.split(separator: ":").last.map(String.init) ?? "2198"
            let providerPort = providerListen.split(separator: ":").last.map(String.init) ?? "2197"
            let host = hostname.contains(":") ? "[\(hostname)]" : hostname
            let trust =
                selfSigned
                ? "the self-signed certificate \(certificate) (copy it to each device)"
                : "the CA that issued \(certificate) (omit --ca if devices trust it already)"
            let adminCurl =
                admin.hasPrefix("unix:")
                ? "curl --unix-socket \(admin.dropFirst(5)) --http2-prior-knowledge http://localhost/health"
                : "curl --http2-prior-knowledge http://\(admin)/health"
            return """
                wrote \(configPath) (providers \(providerListen), devices \(deviceListen), admin \(admin))
                created \(databasePath)
                TLS certificate: \(certificate)

                Next:
                  1. Register a provider key with the bundle IDs it may push to:
                       rouse gateway keys add --config \(configPath) --key-id KEYID --team-id TEAMID \\
                           --public-key key.pub.pem --topic com.example.app
                  2. Open TCP \(providerPort) (providers) and \(port) (devices) in the firewall.
                  3. Start it: systemctl enable --now rouse-gateway   (logs: journalctl -u rouse-gateway)
                     Check it: \(adminCurl)
                  4. For each device: rouse gateway devices enroll-secret --config \(configPath) > secret
                     and on the device, with \(trust):
                       rouse agent enroll --gateway https://\(host):\(port) --ca gateway-ca.pem --secret-file secret
                """
        }

        static func absolute(_ path: String) -> String {
            URL(fileURLWithPath: path).standardizedFileURL.path
        }
    }
}

/// The system user a service runs as (from the package's maintainer scripts), when it exists.
struct ServiceUser {
    let name: String
    let uid: UInt32
    let gid: UInt32

    init?(name: String) {
        guard let account = (try? Sys.account(named: name)) ?? nil else { return nil }
        self.name = name
        uid = account.uid
        gid = account.gid
    }

    /// Hands `paths` to the user (owner and group).
    func own(_ paths: [String]) throws {
        for path in paths where FileManager.default.fileExists(atPath: path) {
            try Sys.changeOwner(path: path, uid: uid, gid: gid)
        }
    }

    /// Whether the file's mode lets the user read it (its directories are not checked).
    func mayRead(_ path: String) -> Bool {
        guard let status = (try? Sys.status(path)) ?? nil else { return false }
        let (owner, group, mode) = (status.uid, status.gid, status.mode)
        return (owner == uid && mode & 0o400 != 0) || (group == gid && mode & 0o040 != 0) || mode & 0o004 != 0
    }

    /// Lets the user's group read a private key that this command created (root's, mode 0640).
    func shareKey(_ path: String) throws {
        try Sys.changeOwner(path: path, uid: nil, gid: gid)
        try Sys.changeMode(path: path, 0o640)
    }
}
