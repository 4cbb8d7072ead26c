import ArgumentParser
import Glibc
import RouseDaemon

// rouse-agent's entry point: SIGTERM, SIGINT and SIGHUP taken by the main thread, Swift concurrency on the agent's
// own epoll loop, neither through libdispatch (see DaemonMain). Launched handlers get an empty signal mask.
DaemonMain.run(loopName: "rouse-agent-loop", signals: [SIGTERM, SIGINT, SIGHUP]) {
    await RouseAgentCommand.main()
}
