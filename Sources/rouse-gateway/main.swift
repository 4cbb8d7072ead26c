import ArgumentParser
import Glibc
import RouseDaemon

// rouse-gateway's entry point: SIGTERM and SIGINT taken by the main thread, Swift concurrency on one epoll loop,
// neither through libdispatch, so an idle gateway wakes only for its heartbeats and sweeps (see DaemonMain).
DaemonMain.run(loopName: "rouse-gateway-loop", signals: [SIGTERM, SIGINT]) {
    await RouseGatewayCommand.main()
}
