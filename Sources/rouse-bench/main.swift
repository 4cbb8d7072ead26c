import Foundation

// rouse-bench: one benchmark per capability. Each prints its figures (and JSON lines with --json).
//   rouse-bench mock-apns [--requests N] [--json]   h2load against rouse mock-apns vs nghttpd (TLS)
//   rouse-bench reach [--iterations N] [--json]     netlink monitor vs ip monitor in a namespace (root)
let arguments = Array(CommandLine.arguments.dropFirst())
let usage = "usage: rouse-bench mock-apns|reach [options]   (--help after the name lists them)"
switch arguments.first {
case "mock-apns":
    try await MockAPNsBench.run(arguments: Array(arguments.dropFirst()))
case "reach":
    try await ReachBench.run(arguments: Array(arguments.dropFirst()))
default:
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}
