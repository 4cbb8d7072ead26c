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
        let command = parse()
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

    /// The command line as a command. `rouse send …`, the one-shot a script or a SIP proxy runs per push, is parsed
    /// against `SendCommand` alone first: ArgumentParser's parse from the root reflects on the whole command tree and
    /// builds `SendCommand`'s argument set twice (once to ask whether it passes its arguments through), about 5 % of
    /// a one-shot push's CPU (docs/benchmarks.md, "Start-up"). Whatever that parse refuses or treats as a request
    /// (`--help`, a completion script, an error: anything that is not a `SendCommand`) is parsed again from the root, so that help, usage and error
    /// messages name `rouse send` exactly as before.
    private static func parse() -> any ParsableCommand {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "send",
            let send = try? SendCommand.parseAsRoot(Array(arguments.dropFirst())) as? SendCommand
        {
            return send  // not help (`--help` parses to ArgumentParser's help command, whose usage would say "send")
        }
        do {
            return try Rouse.parseAsRoot(arguments)
        } catch {
            Rouse.exit(withError: error)
        }
    }
}
