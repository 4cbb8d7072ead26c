import Foundation

/// The package's executables, built next to the test bundle by `swift build --build-tests`.
public enum Products {
    /// Path of a built product (e.g. `rouse`); fails with a clear message when it was not built.
    public static func path(_ name: String) throws -> String {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent(name).path }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw ChildProcess.Failure(
            description: "\(name) not built next to the tests (\(candidates[0])): run `swift build --build-tests`")
    }
}
