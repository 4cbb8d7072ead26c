import ArgumentParser
import RouseGateway

extension GatewayCommand {
    /// `rouse gateway migrate`: brings the store's schema to this build's version (the gateway also does it when it
    /// starts); refuses a database newer than this build.
    struct Migrate: AsyncParsableCommand {
        // The name given, not derived: deriving it reflects on the type (String(describing:)) on every parse.
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract: "Create or upgrade the gateway's database schema (SQLite or PostgreSQL).")
        @OptionGroup var location: GatewayCommand.Location

        func run() async throws {
            let store = try location.store()
            let migration = store.migration
            if location.json {
                print("{\"from\":\(migration.from),\"to\":\(migration.to)}")
            } else if migration.from == migration.to {
                print("schema version \(migration.to): up to date")
            } else {
                print("schema version \(migration.from) -> \(migration.to)")
            }
        }
    }
}
