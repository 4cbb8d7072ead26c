import Foundation

// rouse-bench: one benchmark per capability. Each prints its figures (and JSON with --json).
//   rouse-bench mock-apns [--requests N] [--json]   h2load against rouse mock-apns vs nghttpd
let arguments = Array(CommandLine.arguments.dropFirst())
let usage = "usage: rouse-bench mock-apns [options]   (see --help of each)"
switch arguments.first {
case "mock-apns":
    try await MockAPNsBench.run(arguments: Array(arguments.dropFirst()))
default:
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}
