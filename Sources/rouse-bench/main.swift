let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "send" {
    do {
        try await SendBench.run(arguments: Array(arguments.dropFirst()))
    } catch {
        print("rouse-bench send: \(error)")
    }
} else {
    print("rouse-bench")
}
