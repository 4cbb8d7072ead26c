import ArgumentParser

/// `rouse mock-apns`: an APNs-faithful HTTP/2 endpoint for tests and CI.
struct MockAPNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mock-apns", abstract: "Run a mock APNs endpoint.")
    func run() async throws {}
}
