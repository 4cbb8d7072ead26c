import Glibc

// rouse-agent's entry point. Before anything else: SIGTERM, SIGINT and SIGHUP are blocked in every thread (threads
// inherit the mask of the thread that creates them, and none exists yet) and taken here with sigwaitinfo, and
// Swift concurrency runs on the agent's own epoll loop (LoopExecutor). Neither uses libdispatch, whose worker
// threads would leave a one-second timer behind (see LoopExecutor). Launched handlers get an empty signal mask.
var signals = sigset_t()
sigemptyset(&signals)
for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, signal) }
pthread_sigmask(SIG_BLOCK, &signals, nil)
do {
    _ = try LoopExecutor.install()
} catch {
    let message = Array("rouse-agent: cannot start its event loop: \(error)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
Task {
    await RouseAgentCommand.main()
    exit(0)
}
AgentSignals.wait(for: signals)
