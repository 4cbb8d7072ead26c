import Glibc
import Logging
import RouseReachability
import RouseSystem

// rouse-reach watch TARGET… [--json] [--netns PATH]: `rouse reach watch` (the same monitor, targets and
// lines) built without Foundation, ArgumentParser, Swift concurrency or the C libraries `rouse` links
// for its other commands (libcurl, OpenSSL, nghttp2, SQLite), so that an idle watcher holds only the
// Swift runtime, libc and its own pages. docs/benchmarks.md's `rouse reach` section has the figures.

let usage = """
    usage: rouse-reach watch TARGET… [--json] [--netns PATH]
      TARGET  a host name, an IP address, an address pair LOCAL,REMOTE, or 0.0.0.0 / :: / any
      --json  one JSON object per line (timestamps in microseconds)
      --netns monitor the network namespace at PATH (e.g. /run/netns/NAME)

    """

func fail(_ message: String, status: Int32 = 2) -> Never {
    let bytes = Array((message + "\n").utf8)
    bytes.withUnsafeBytes { raw in
        do throws(SystemError) { try Sys.writeAll(2, raw) } catch {}
    }
    Sys.exit(status)
}

var arguments = CommandLine.arguments.dropFirst()
if arguments.first == "--help" || arguments.first == "-h" {
    fail(usage, status: 0)
}
guard arguments.popFirst() == "watch" else { fail(usage) }
var json = false
var netns: String?
var targets: [ReachabilityTarget] = []
while let argument = arguments.popFirst() {
    switch argument {
    case "--json": json = true
    case "--netns":
        guard let path = arguments.popFirst() else { fail("--netns needs a path\n" + usage) }
        netns = path
    case "--help", "-h": fail(usage, status: 0)
    default:
        do throws(ReachabilityError) {
            targets.append(try ReachabilityTarget(parsing: argument))
        } catch {
            fail("bad target \(error.context)")
        }
    }
}
guard !targets.isEmpty else { fail("give at least one target\n" + usage) }

var logger = Logger(label: "rouse.reach")
logger.logLevel = .notice
let monitor = ReachabilityMonitor(configuration: .init(networkNamespacePath: netns), logger: logger)
for target in targets { monitor.watch(target) }
monitor.addSynchronousHandler { [json] notice in ReachabilityLines.print(notice, json: json) }
do throws(ReachabilityError) {
    try monitor.start()
} catch {
    fail("cannot start the reachability monitor: \(error)", status: 1)
}
// Until SIGINT/SIGTERM (default action) or a closed stdout ends the process.
while true { pause() }
