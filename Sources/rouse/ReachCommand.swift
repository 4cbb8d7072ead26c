import ArgumentParser

/// `rouse reach`: watch and print network reachability.
struct ReachCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reach", abstract: "Network reachability.")
    func run() async throws {}
}
