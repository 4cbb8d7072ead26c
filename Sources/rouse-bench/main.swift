import Foundation

// rouse-bench: one benchmark per capability. Each prints its figures (and JSON lines with --json).
//   rouse-bench mock-apns [--requests N] [--json]   h2load against rouse mock-apns vs nghttpd (TLS)
//   rouse-bench reach [--iterations N] [--json]     netlink monitor vs ip monitor in a namespace (root)
//   rouse-bench gateway [--pushes N] [--json]       durable ingest, provider → device latency, channel memory
//   rouse-bench agent [--samples N] [--json]         push → handler latency, reconnect time, idle wakeups, RSS
let arguments = Array(CommandLine.arguments.dropFirst())
let usage = "usage: rouse-bench mock-apns|reach|gateway|agent [options]   (--help after the name lists them)"
switch arguments.first {
case "mock-apns":
    try await MockAPNsBench.run(arguments: Array(arguments.dropFirst()))
case "reach":
    try await ReachBench.run(arguments: Array(arguments.dropFirst()))
case "gateway":
    try await GatewayBench.run(arguments: Array(arguments.dropFirst()))
case "agent":
    try await AgentBench.run(arguments: Array(arguments.dropFirst()))
default:
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}
