let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "gateway" {
    try await GatewayBench.run(arguments: Array(arguments.dropFirst()))
} else {
    print("rouse-bench")
}
