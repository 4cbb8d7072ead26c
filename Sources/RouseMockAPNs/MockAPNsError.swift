/// Errors of the mock APNs engine: bad `--tokens`/`--faults` files and waits that timed out.
public struct MockAPNsError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case badTokensFile
        case badFaultsFile
        case badKeysFile
        case timeout
    }

    private let code: Code
    /// Where and what: the JSON path and the problem, or the wait's numbers.
    public let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// The device-token file is not what `DeviceTokenRegistry.parse(json:)` documents.
    public static func badTokensFile(_ detail: String) -> MockAPNsError { MockAPNsError(.badTokensFile, detail) }
    /// The fault file is not what `MockFaultScript.parse(json:)` documents.
    public static func badFaultsFile(_ detail: String) -> MockAPNsError { MockAPNsError(.badFaultsFile, detail) }
    /// The key table is not what `MockKeyFile.parse(json:readPEM:)` documents.
    public static func badKeysFile(_ detail: String) -> MockAPNsError { MockAPNsError(.badKeysFile, detail) }
    /// `waitForRecords` reached its deadline first.
    public static func timeout(_ detail: String) -> MockAPNsError { MockAPNsError(.timeout, detail) }

    public static func == (lhs: MockAPNsError, rhs: MockAPNsError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A one-line description.
    public var description: String {
        switch code {
        case .badTokensFile: "bad device-token file: \(detail)"
        case .badFaultsFile: "bad fault file: \(detail)"
        case .badKeysFile: "bad key file: \(detail)"
        case .timeout: "timed out waiting for records: \(detail)"
        }
    }
}
