import ArgumentParser
import RouseAPNs
import RouseGateway

extension GatewayCommand {
    /// `rouse gateway nodes`: the gateway nodes sharing a PostgreSQL store, live or not (a node whose lease ran out
    /// is dead: it stopped renewing, or was killed), and how many device channels each holds.
    struct Nodes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "nodes",
            abstract: "List the gateway nodes sharing the store (PostgreSQL) and the channels each holds.")
        @OptionGroup var location: GatewayCommand.Location
        @Flag(name: .long, help: "Dead nodes (lease run out) too.") var all = false

        func run() async throws {
            let now = Gateway.systemMilliseconds()
            let nodes = try location.store().read { try $0.nodes() }.filter { all || $0.leaseExpiresAt > now }
            if location.json {
                let items = nodes.map { node in
                    "{\"node\":\(JSONText.quoted(node.id)),\"live\":\(node.leaseExpiresAt > now),"
                        + "\"channels\":\(node.channels),\"startedAt\":\(node.startedAt),"
                        + "\"leaseExpiresAt\":\(node.leaseExpiresAt)}"
                }
                print("[" + items.joined(separator: ",") + "]")
                return
            }
            if nodes.isEmpty { print("no live nodes (SQLite has none: one node, no lease)") }
            for node in nodes {
                let state = node.leaseExpiresAt > now ? "live" : "dead"
                print(
                    "\(node.id)  \(state)  channels \(node.channels)  started \(GatewayCommand.time(node.startedAt))"
                        + "  lease until \(GatewayCommand.time(node.leaseExpiresAt))")
            }
        }
    }
}
