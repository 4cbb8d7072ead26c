import Glibc
import RouseEventLoop

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
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        do {
            _ = try LoopExecutor.install(name: loopName)
        } catch {
            let message = Array("\(loopName): cannot start its event loop: \(error)\n".utf8)
            _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            exit(1)
        }
        Task {
            await body()
            exit(0)
        }
        DaemonSignals.wait(for: set)
    }
}
