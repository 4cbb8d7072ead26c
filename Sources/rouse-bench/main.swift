import Foundation

// rouse-bench: one benchmark per capability. Each prints its figures (and JSON lines with --json).
//   rouse-bench send [--pushes N]                   rouse send's engines vs h2load on the mock, VoIP under bulk
//   rouse-bench send --versus-floor [--json]        h2load, C libcurl and rouse send on one nghttpd, side by side
//   rouse-bench mock-apns [--requests N] [--json]   h2load against rouse mock-apns vs nghttpd (TLS)
//   rouse-bench reach [--iterations N] [--json]     netlink monitor vs ip monitor in a namespace (root);
//                     [--cli [--rouse PATH]…]        rouse reach watch read from a pipe vs ip monitor
//   rouse-bench gateway [--pushes N] [--json]       durable ingest, provider → device latency, channel memory
//   rouse-bench gateway --attack [--json]           half-open streams, bogus-bearer flood, idle wake-ups, ingest
//   rouse-bench webpush [--pushes N] [--json]       WebPush (HTTP/1.1) ingest rate and sender → device latency next
//                     to the APNs path (HTTP/2) through the same gateway
//   rouse-bench state [--pieces N] [--json]         preserve/restore time and archive size (encrypted archives)
//   rouse-bench activation [--decisions N] [--json] audio-session arbiter decisions per second, p50/p99
//   rouse-bench agent [--samples N] [--json]        push → handler latency, reconnect time, idle wakeups, RSS
//   rouse-bench push-service [--samples N]          rouse-pushd's added latency and rate vs in-process RouseSender,
//                     one-shot rouse send and curl --http2, all against one mock
//   rouse-bench transfers [--mib N] [--rounds N] [--json]  a download through the agent vs curl, same server
//     [--link-drop] [--discretionary-idle SECONDS]  (root) resume after a 2 s link drop; idle with 100 queued tasks
//   rouse-bench sip [--calls N] [--rounds N] [--json]  INVITE → 200 OK: awake baresip vs woken by a push (Kamailio)
//   rouse-bench chaos [--seconds N] [--json]        (root) 3 gateway nodes under kills, PostgreSQL restarts and
//                     link drops: pushes lost, delivered twice
//   rouse-bench json [--frames N] [--json]          IPC frames and channel records: RouseText's JSONCoding vs
//                     Foundation's JSONEncoder/JSONDecoder, same messages, same run
let arguments = Array(CommandLine.arguments.dropFirst())
let usage =
    "usage: rouse-bench send|mock-apns|reach|gateway|webpush|state|activation|agent|push-service|transfers|sip|chaos|json [options] (--help lists them)"
do {
    switch arguments.first {
    case "send":
        try await SendBench.run(arguments: Array(arguments.dropFirst()))
    case "mock-apns":
        try await MockAPNsBench.run(arguments: Array(arguments.dropFirst()))
    case "reach":
        try await ReachBench.run(arguments: Array(arguments.dropFirst()))
    case "gateway":
        try await GatewayBench.run(arguments: Array(arguments.dropFirst()))
    case "webpush":
        try await WebPushBench.run(arguments: Array(arguments.dropFirst()))
    case "state":
        try await StateBench.run(arguments: Array(arguments.dropFirst()))
    case "activation":
        try await ActivationBench.run(arguments: Array(arguments.dropFirst()))
    case "agent":
        try await AgentBench.run(arguments: Array(arguments.dropFirst()))
    case "push-service":
        try await PushServiceBench.run(arguments: Array(arguments.dropFirst()))
    case "transfers":
        try await TransferBench.run(arguments: Array(arguments.dropFirst()))
    case "sip":
        try await SIPBench.run(arguments: Array(arguments.dropFirst()))
    case "chaos":
        try await ChaosBench.run(arguments: Array(arguments.dropFirst()))
    case "json":
        try await JSONBench.run(arguments: Array(arguments.dropFirst()))
    default:
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("rouse-bench: \(error)\n".utf8))
    exit(1)
}
