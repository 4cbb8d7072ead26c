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

    /// A copy of product `name` that every user can execute, wherever the checkout is (a home directory of mode
    /// 0700, such as /root, included): in a new directory of the temporary directory (mkdtemp, then mode 0755),
    /// removed when the test's scope ends. For handlers that run as another user.
    public static func copyForEveryUser(_ name: String) throws -> String {
        let temporary = FileManager.default.temporaryDirectory.path
        // The directories above the copy must let everyone through, or the copy is as unreachable as the original.
        var ancestor = URL(fileURLWithPath: temporary)
        while ancestor.path != "/" {
            let mode = (try? FileManager.default.attributesOfItem(atPath: ancestor.path)[.posixPermissions] as? Int)
            guard let mode, mode & 0o001 != 0 else {
                throw ChildProcess.Failure(
                    description: "\(ancestor.path) is not searchable by other users: set TMPDIR to a directory that is")
            }
            ancestor.deleteLastPathComponent()
        }
        var template = Array("\(temporary)/rouse-bin-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ChildProcess.Failure(description: "mkdtemp in \(temporary): \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        TestScope.current?.onEnd { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/" + name
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
        try FileManager.default.copyItem(atPath: try path(name), toPath: copy)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy)
        return copy
    }
}
