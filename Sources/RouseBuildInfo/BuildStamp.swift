// deploy/package.sh writes this file anew in its copy of the tree (version, commit, how it was built);
// this copy, in the repository, describes a development build.
enum BuildStamp {
    static let version: String? = nil
    static let commit: String? = nil
    static let build = "development build"
}
