import ArgumentParser
import FoundationEssentials
import RouseAPNs
import RouseGateway

/// `rouse gateway …`: administration of a `rouse-gateway` through its SQLite file (safe while it runs: WAL
/// lets readers and one writer share the file; the gateway picks up key changes for new provider connections
/// within a second).
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway",
        abstract: "Administer a rouse-gateway: provider keys, devices, tokens.",
        subcommands: [Init.self, Keys.self, Devices.self, Tokens.self, Migrate.self, Nodes.self])

    /// Where the database is: `--database` or the gateway's `--config`.
    struct Location: ParsableArguments {
        @Option(name: .long, help: "The gateway's SQLite file, or its PostgreSQL URL (postgresql://…).")
        var database: String?

        @Option(name: .long, help: "The gateway's configuration file (its database is used).")
        var config: String?

        @Flag(name: .long, help: "Print JSON.")
        var json = false

        func store() throws -> any GatewayStore {
            if let database { return try GatewayConfiguration.openStore(database: database) }
            if let config { return try GatewayConfiguration.load(path: config).openStore() }
            throw ValidationError("give --database FILE|URL or --config FILE")
        }
    }

    static func time(_ milliseconds: Int64?) -> String {
        guard let milliseconds else { return "-" }
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return Date.ISO8601FormatStyle().format(date)
    }

    // MARK: keys

    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keys",
            abstract: "Provider signing keys (ES256, token authentication).",
            subcommands: [Add.self, List.self, Revoke.self, Unrevoke.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add", abstract: "Register a provider key (or replace it).")
            @OptionGroup var location: Location
            @Option(name: .long, help: "Key ID (kid), 10 characters.") var keyID: String
            @Option(name: .long, help: "Team ID (iss).") var teamID: String
            @Option(name: .long, help: "The public key, PEM file (openssl ec -pubout).") var publicKey: String
            @Option(
                name: .long,
                help:
                    "A bundle ID the key may push to (repeat; required); '*': every topic, single-tenant gateways only."
            )
            var topic: [String] = []

            func validate() throws {
                if topic.isEmpty {
                    throw ValidationError(
                        "--topic is required: name the bundle IDs the key may push to (repeat --topic), or --topic '*' "
                            + "for every topic (single-tenant gateways only)")
                }
                if let problem = GatewayConfiguration.topicListProblem(topic) {
                    throw ValidationError("--topic: \(problem)")
                }
            }

            func run() async throws {
                guard let data = FileManager.default.contents(atPath: publicKey) else {
                    throw ValidationError("--public-key: cannot read \(publicKey)")
                }
                let pem = String(decoding: data, as: UTF8.self)
                do {
                    _ = try APNsSigningKey(teamID: teamID, keyID: keyID, publicKeyPEM: pem)
                } catch {
                    throw ValidationError("--public-key: not a P-256 public key PEM")
                }
                let record = ProviderKeyRecord(
                    keyID: keyID, teamID: teamID, publicKeyPEM: pem, topics: topic,
                    createdAt: Gateway.systemMilliseconds(), revokedAt: nil)
                let revoked = try location.store().write { transaction in
                    try transaction.upsertProviderKey(record)
                    return try transaction.providerKeys(includeRevoked: true).first { $0.keyID == keyID }?.revokedAt
                }
                if location.json {
                    print("{\"added\":\(JSONText.quoted(keyID)),\"revoked\":\(revoked != nil)}")
                } else if revoked != nil {
                    print(
                        "updated key \(keyID) (team \(teamID)); it stays revoked: rouse gateway keys unrevoke \(keyID)")
                } else {
                    print("added key \(keyID) (team \(teamID))")
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list", abstract: "List provider keys (revoked ones too).")
            @OptionGroup var location: Location

            func run() async throws {
                let keys = try location.store().read { try $0.providerKeys(includeRevoked: true) }
                if location.json {
                    let items = keys.map { key in
                        "{\"keyID\":\(JSONText.quoted(key.keyID)),\"teamID\":\(JSONText.quoted(key.teamID)),"
                            + "\"topics\":\(key.topics.map { "[" + $0.map(JSONText.quoted).joined(separator: ",") + "]" } ?? "null"),"
                            + "\"revokedAt\":\(key.revokedAt.map(String.init) ?? "null")}"
                    }
                    print("[" + items.joined(separator: ",") + "]")
                    return
                }
                for key in keys {
                    let state = key.revokedAt.map { "revoked \(GatewayCommand.time($0))" } ?? "active"
                    print(
                        "\(key.keyID)  team \(key.teamID)  topics \(key.topics?.joined(separator: ",") ?? "none")  \(state)"
                    )
                }
            }
        }

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke", abstract: "Revoke a provider key (new connections).")
            @OptionGroup var location: Location
            @Argument(help: "The key ID.") var keyID: String

            func run() async throws {
                guard try location.store().write({ try $0.revokeProviderKey(keyID, at: Gateway.systemMilliseconds()) })
                else { throw ValidationError("no active key \(keyID)") }
                print(location.json ? "{\"revoked\":\(JSONText.quoted(keyID))}" : "revoked key \(keyID)")
            }
        }

        struct Unrevoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "unrevoke",
                abstract: "Re-enable a revoked provider key (neither the configuration nor keys add does).")
            @OptionGroup var location: Location
            @Argument(help: "The key ID.") var keyID: String

            func run() async throws {
                guard try location.store().write({ try $0.unrevokeProviderKey(keyID) })
                else { throw ValidationError("no revoked key \(keyID)") }
                print(location.json ? "{\"unrevoked\":\(JSONText.quoted(keyID))}" : "unrevoked key \(keyID)")
            }
        }
    }

    // MARK: devices

    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "devices",
            abstract: "Devices: list, revoke, enrollment secrets.", subcommands: [List.self, Revoke.self, Enroll.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list", abstract: "List devices with their pending pushes.")
            @OptionGroup var location: Location

            func run() async throws {
                let (devices, counts, reports) = try location.store().read {
                    try ($0.devices(), $0.pendingCounts(), $0.handlerReports(deviceID: nil))
                }
                if location.json {
                    print(DeviceJSON.list(devices, pending: counts, handlers: reports))
                    return
                }
                for d in devices {
                    let state = d.revokedAt.map { "revoked \(GatewayCommand.time($0))" } ?? "active"
                    print(
                        "\(d.id)  \(d.authentication.rawValue)  enrolled \(GatewayCommand.time(d.createdAt))  pending \(counts[d.id] ?? 0)  \(state)"
                    )
                    for report in reports where report.deviceID == d.id {
                        print(
                            "  handler \(report.topic)  strikes=\(report.strikes)"
                                + (report.voipBlocked ? "  voip-blocked" : "")
                                + "  reported \(GatewayCommand.time(report.reportedAt))")
                    }
                }
            }
        }

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke",
                abstract: "Revoke a device: its tokens answer 410 Unregistered, its pending pushes are dropped.")
            @OptionGroup var location: Location
            @Argument(help: "The device ID.") var deviceID: String

            func run() async throws {
                guard try location.store().write({ try $0.revokeDevice(deviceID, at: Gateway.systemMilliseconds()) })
                else { throw ValidationError("no active device \(deviceID)") }
                print(location.json ? "{\"revoked\":\(JSONText.quoted(deviceID))}" : "revoked device \(deviceID)")
            }
        }

        struct Enroll: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "enroll-secret", abstract: "Create a one-time enrollment secret for a new device.")
            @OptionGroup var location: Location
            @Option(name: .long, help: "Hours the secret stays valid.") var validityHours: Int = 24

            func run() async throws {
                let secret = try Gateway.makeEnrollmentSecret(
                    store: location.store(), now: Gateway.systemMilliseconds(),
                    validity: .seconds(Int64(validityHours) * 3600))
                print(location.json ? "{\"secret\":\"\(secret)\"}" : secret)
            }
        }
    }

    // MARK: tokens

    struct Tokens: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tokens", abstract: "Push tokens.", subcommands: [List.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list", abstract: "List tokens (dropped ones too).")
            @OptionGroup var location: Location
            @Option(name: .long, help: "Only this device's tokens.") var device: String?

            func run() async throws {
                let tokens = try location.store().read { try $0.tokens(deviceID: device) }
                if location.json {
                    let items = tokens.map { t in
                        "{\"token\":\"\(t.token)\",\"device\":\(JSONText.quoted(t.deviceID)),"
                            + "\"topic\":\(JSONText.quoted(t.topic)),\"createdAt\":\(t.createdAt),"
                            + "\"revokedAt\":\(t.revokedAt.map(String.init) ?? "null")}"
                    }
                    print("[" + items.joined(separator: ",") + "]")
                    return
                }
                for t in tokens {
                    let state = t.revokedAt.map { "dropped \(GatewayCommand.time($0))" } ?? "live"
                    print("\(t.token)  \(t.deviceID)  \(t.topic)  \(state)")
                }
            }
        }
    }
}
