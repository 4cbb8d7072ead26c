import ArgumentParser
import RouseBuildInfo

/// `rouse`: the command-line front of Rouse (push sender, mock APNs, reachability, gateway and agent set-up and admin).
@main
struct Rouse: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rouse",
        abstract: "VoIP push, reachability and mock APNs tools for Linux.",
        version: BuildInfo.versionText,
        subcommands: [
            SendCommand.self, MockAPNsCommand.self, ReachCommand.self, GatewayCommand.self, AgentCommand.self,
        ]
    )
}
