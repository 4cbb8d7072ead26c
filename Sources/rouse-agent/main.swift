import ArgumentParser
import Glibc
import RouseDaemon
import RouseSystem

// rouse-agent's entry point: SIGTERM, SIGINT and SIGHUP taken by the main thread, Swift concurrency on the agent's
// own epoll loop, neither through libdispatch (see DaemonMain). Launched handlers get an empty signal mask.
// A log stream that went away (a closed pipe, a journal stream shut down) is EPIPE on the next line, not the end of
// the agent: SIGPIPE ignored (handlers get default dispositions, see rouse_spawnattr_defaults).
Sys.ignoreBrokenPipe()
DaemonMain.run(loopName: "rouse-agent-loop", signals: [SIGTERM, SIGINT, SIGHUP]) {
    await RouseAgentCommand.main()
}
