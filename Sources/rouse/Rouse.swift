import ArgumentParser
import Dispatch
import Glibc
import RouseBuildInfo
import RouseDaemon

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
/// monitor timer wakes the process once a second for as long as it lives. `rouse mock-apns`, a server
/// that may idle for hours, runs like the daemons (`DaemonMain`: Swift concurrency on one epoll loop,
/// SIGTERM and SIGINT taken by the main thread). Other asynchronous commands run as
/// `AsyncParsableCommand.main()` runs them (a nonisolated task; errors reported by `exit(withError:)`),
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
        if asynchronous is MockAPNsCommand {
            DaemonMain.run(loopName: "rouse-mock-apns-loop", signals: [SIGTERM, SIGINT]) {
                var running = asynchronous
                do {
                    try await running.run()
                } catch {
                    Rouse.exit(withError: error)
                }
            }
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
