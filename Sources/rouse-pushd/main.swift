import ArgumentParser
import Glibc
import RouseDaemon

// rouse-pushd's entry point: SIGTERM, SIGINT and SIGHUP taken by the main thread, Swift concurrency on one epoll loop,
// neither through libdispatch, so an idle service sleeps (see DaemonMain).
DaemonMain.run(loopName: "rouse-pushd-loop", signals: [SIGTERM, SIGINT, SIGHUP]) {
    await RousePushdCommand.main()
}
