import Foundation
import RouseAgent
import RouseAgentCore
import RouseTestSupport
import Testing

@testable import RouseGateway

/// The commented examples the packages install in /etc/rouse (deploy/debian/*.example) against the parsers the
/// daemons use, so they cannot drift from the code: every member the gateway reads is shown, with its default;
/// the handler example, with every commented key taken in, gives the agent's default rules. (deploy/package-test.sh
/// also runs the installed copies through the installed binaries.)
@Suite("Packaged example configurations")
struct PackagedExamplesTests {
    static let gatewayExample = Repository.root + "/deploy/debian/gateway.json.example"
    static let handlerExample = Repository.root + "/deploy/debian/example.toml.example"

    /// The example without its `//` comments (a `//` after a space or at a line's start: none is inside a value),
    /// with the absolute paths it names moved under `directory`.
    static func gatewayJSON(movingPathsTo directory: String) throws -> String {
        let text = try String(contentsOfFile: gatewayExample, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var line = String(line)
            if let comment = line.range(of: #"(^|\s)//.*$"#, options: .regularExpression) {
                line.removeSubrange(comment)
            }
            return line.replacingOccurrences(of: "/etc/rouse/gateway/", with: directory + "/")
                .replacingOccurrences(of: "/var/lib/rouse-gateway/", with: directory + "/")
        }.joined(separator: "\n")
    }

    @Test func theGatewayExampleParsesAndShowsEveryLimitWithItsDefault() throws {
        let directory = try FirstRun.temporaryDirectory()
        try FileManager.default.copyItem(
            atPath: Repository.cert("apns-key.pub.pem"), toPath: directory + "/ABCDE12345.pub.pem")
        let json = try Self.gatewayJSON(movingPathsTo: directory)
        let configuration = try GatewayConfiguration.parse(
            data: Data(json.utf8), baseDirectory: directory, source: Self.gatewayExample)
        #expect(configuration.keys.map(\.keyID) == ["ABCDE12345"])
        #expect(configuration.admin?.listen == "unix:/run/rouse-gateway/admin.sock")
        #expect(configuration.postgres == nil)

        // Every limit the code has appears in the example, and with the code's default.
        let defaults = Mirror(reflecting: GatewayConfiguration.Limits()).children
        let shown = Dictionary(
            uniqueKeysWithValues: Mirror(reflecting: configuration.limits).children.compactMap { child in
                child.label.map { ($0, String(describing: child.value)) }
            })
        #expect(defaults.count > 20)
        for child in defaults {
            let name = try #require(child.label)
            #expect(json.contains("\"\(name)\":"), "limits.\(name) is missing from gateway.json.example")
            #expect(
                shown[name] == String(describing: child.value),
                "limits.\(name): the example shows \(shown[name] ?? "-"), the default is \(child.value)")
        }
        let plain = GatewayConfiguration(
            provider: .init(listen: ""), device: .init(listen: ""), admin: nil, databasePath: "")
        #expect(configuration.workers == plain.workers)
        #expect(configuration.environment == plain.environment)
    }

    /// Every member the parser accepts, of every object, is named in the example (in a value or a comment).
    @Test func theGatewayExampleNamesEveryMemberTheParserKnows() throws {
        let text = try String(contentsOfFile: Self.gatewayExample, encoding: .utf8)
        let members = GatewayConfiguration.knownMembers
        #expect(members["$"]?.contains("database") == true && members["limits"]?.contains("window") == true)
        for (kind, names) in members {
            for name in names.sorted() {
                #expect(text.contains("\"\(name)\":"), "\(kind).\(name) is missing from gateway.json.example")
            }
        }
        let settings = Mirror(reflecting: PostgresSettings()).children.compactMap(\.label)
        #expect(settings.count >= 8)
        for name in settings where name != "url" {
            #expect(text.contains("\"\(name)\":"), "postgres.\(name) is missing from gateway.json.example")
        }
    }

    @Test func theHandlerExampleWithEveryKeyGivesTheAgentsDefaults() throws {
        let text = try String(contentsOfFile: Self.handlerExample, encoding: .utf8)
        let shipped = try HandlerConfiguration.parse(text, name: "example", file: Self.handlerExample)
        #expect(shipped.rules == HandlerRules())
        // Every commented `key = value` line (and the [limits] header) taken in.
        let all = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            let line = String(line)
            guard line.range(of: #"^# ([a-z-]+ = |\[limits\])"#, options: .regularExpression) != nil else {
                return line
            }
            return String(line.dropFirst(2))
        }.joined(separator: "\n")
        let taken = all.split(separator: "\n").filter {
            $0.range(of: #"^[a-z-]+ = "#, options: .regularExpression) != nil
        }
        #expect(taken.count >= 18, "keys: \(taken)")
        // rouse-handler may not exist on this machine: the account keys are checked by the package test.
        let withoutAccounts = all.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("user = ") && !$0.hasPrefix("group = ") }.joined(separator: "\n")
        let every = try HandlerConfiguration.parse(withoutAccounts, name: "example", file: Self.handlerExample)
        #expect(every.rules == HandlerRules(), "the example's limits differ from the agent's defaults")
        #expect(every.environment == ["TZ", "MODE=night"])
    }
}
