import ArgumentParser
import FoundationEssentials
import RouseAgentClient

extension AgentCommand {
    /// `rouse agent rotate-key [--json]`: the running agent re-seals every file it stores under a new data key
    /// (inside the agent, with no write in flight); an interrupted rotation is completed at the next start.
    struct RotateKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-key", abstract: "Re-encrypt everything the agent stores under a new data key.")
        @OptionGroup var options: SocketOption
        @Flag(help: "Print {\"keyID\": …} as JSON.") var json = false

        func run() async throws {
            let answer = try await AgentCommand.request(.rotateKey, socket: options.socket)
            guard case .ok(let reply) = answer else { throw AgentCommand.unexpected(answer) }
            let id = reply.detail ?? "-"
            print(json ? #"{"keyID":"\#(id)"}"# : "data key rotated: new key id \(id)")
        }
    }
}
