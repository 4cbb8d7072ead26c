if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "reach" {
    try await ReachBench.run(arguments: Array(CommandLine.arguments.dropFirst(2)))
} else {
    print("rouse-bench")
}
