import Foundation

/// Paths inside the repository, for fixtures such as the test PKI in `certs/`.
public enum Repository {
    /// The package root.
    public static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// A file of the committed test PKI (`certs/<name>`).
    public static func cert(_ name: String) -> String { "\(root)/certs/\(name)" }
}
