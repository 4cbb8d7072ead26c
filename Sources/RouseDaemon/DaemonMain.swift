import RouseEventLoop
import RouseSystem

/// The start of a Rouse daemon (rouse-agent, rouse-gateway, `rouse mock-apns`), so that an idle daemon sleeps: its
/// signals taken by the main thread (``DaemonSignals``) and Swift concurrency run on one epoll loop
/// (``LoopExecutor``), neither through libdispatch.
package enum DaemonMain {
    /// Blocks `signals` in every thread (threads inherit the mask of the thread that creates them, and none exists
    /// yet), installs ``LoopExecutor`` on a loop thread named `loopName`, runs `body` as the first task and exits
    /// with 0 when it returns (`AsyncParsableCommand.main()` exits by itself on errors), and takes `signals` on
    /// this thread for ever. Handlers launched later reset their mask themselves (the agent's spawn path).
    package static func run(
        loopName: String, signals: [Int32], _ body: sending @escaping () async -> Void
    ) -> Never {
        let set = Sys.blockSignals(signals)
        do {
            _ = try LoopExecutor.install(name: loopName)
        } catch {
            Sys.writeStandardError("\(loopName): cannot start its event loop: \(error)\n")
            Sys.exit(1)
        }
        Task {
            await body()
            Sys.exit(0)
        }
        DaemonSignals.wait(for: set)
    }
}
