/// What a binary was built from, for `--version`: release packages (`deploy/package.sh`) replace
/// `BuildStamp.swift` with the package version and the git commit; the copy in the repository marks a
/// development build, so a binary built with plain `swift build` says so.
package enum BuildInfo {
    /// The package version (e.g. `0.1.0~git812.fe3b4d6`), or nil in a development build.
    package static var version: String? { BuildStamp.version }

    /// The full git commit the binary was built from (`-dirty` when the tree had uncommitted changes), or nil.
    package static var commit: String? { BuildStamp.commit }

    /// The text `--version` prints: `0.1.0~git812.fe3b4d6 (commit fe3b4d6…, release build, Swift runtime linked
    /// statically)`, or `development build (no version or commit embedded; deploy/package.sh makes releases)`.
    package static var versionText: String {
        guard let version else {
            return "development build (no version or commit embedded; deploy/package.sh makes releases)"
        }
        return "\(version) (commit \(commit ?? "unknown"), \(BuildStamp.build))"
    }
}
