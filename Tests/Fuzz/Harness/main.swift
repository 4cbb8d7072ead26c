import CRouseFuzz
import Glibc

// rouse-fuzz TARGET [libFuzzer flags] [corpus directories]   fuzz one parser (see FuzzTarget.all)
// rouse-fuzz --list                                          the targets, one a line, with what each feeds
// rouse-fuzz --seeds DIR                                     writes the generated seeds into DIR/<target>/
let arguments = CommandLine.arguments
switch arguments.dropFirst().first {
case "--list":
    for target in FuzzTarget.all { print("\(target.name)\t\(target.summary)") }
    exit(0)
case "--seeds":
    guard arguments.count == 3 else {
        printError("usage: rouse-fuzz --seeds DIR")
        exit(2)
    }
    exit(GeneratedSeeds.write(into: arguments[2]) ? 0 : 1)
case let name? where FuzzTarget.named(name) != nil:
    // The target travels in the environment, where the C callback (which captures nothing) reads it, and where
    // libFuzzer's -fork/-jobs children find it again.
    setenv(FuzzTarget.environmentVariable, name, 1)
    // libFuzzer sees the command line without the target's name.
    var argc = CommandLine.argc - 1
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    argv?[1] = argv?[0]
    argv = argv.map { $0 + 1 }
    exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in FuzzTarget.runSelected(data, size) })
default:
    if let name = getenv(FuzzTarget.environmentVariable).map({ String(cString: $0) }),
        FuzzTarget.named(name) != nil
    {
        // A libFuzzer child (-fork/-jobs) started without the target's name: it is in the environment.
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in FuzzTarget.runSelected(data, size) })
    }
    printError("usage: rouse-fuzz TARGET [libFuzzer flags] [corpus...] | --list | --seeds DIR")
    printError("targets: \(FuzzTarget.all.map(\.name).joined(separator: " "))")
    exit(2)
}
