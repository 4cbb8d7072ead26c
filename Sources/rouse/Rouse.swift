import ArgumentParser
import Dispatch
import RouseBuildInfo

/// `rouse`: the command-line front of Rouse (push sender, mock APNs, reachability, gateway and agent set-up and admin).
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

/// The entry point. A synchronous command (`rouse reach watch`) runs on the main thread and never
/// starts the Swift concurrency runtime: on Linux its executors are libdispatch's worker pool, whose
/// monitor timer wakes the process once a second for as long as it lives. Asynchronous commands run
/// as `AsyncParsableCommand.main()` runs them (a nonisolated task; errors reported by `exit(withError:)`),
/// with `dispatchMain()` parking the main thread.
@main
enum RouseMain {
    static func main() {
        let command: any ParsableCommand
        do {
            command = try Rouse.parseAsRoot()
        } catch {
            Rouse.exit(withError: error)
        }
        guard let asynchronous = command as? any AsyncParsableCommand else {
            var synchronous = command
            do {
                try synchronous.run()
            } catch {
                Rouse.exit(withError: error)
            }
            Rouse.exit()
        }
        Task.detached {
            var running = asynchronous
            do {
                try await running.run()
            } catch {
                Rouse.exit(withError: error)
            }
            Rouse.exit()
        }
        dispatchMain()
    }
}
