import RouseAPNs

/// Counters of what the mock answered, for the admin endpoint and benchmarks.
public struct MockStatistics: Sendable, Hashable {
    /// Requests answered 200.
    public var accepted = 0
    /// Requests answered with an error, by reason.
    public var rejected: [APNsReason: Int] = [:]
    /// Requests not processed because of a fault, by fault name.
    public var unprocessed: [String: Int] = [:]

    /// Empty counters.
    public init() {}

    /// All requests counted.
    public var total: Int { accepted + rejected.values.reduce(0, +) + unprocessed.values.reduce(0, +) }

    mutating func count(_ outcome: PushRecord.Outcome) {
        switch outcome {
        case .accepted: accepted += 1
        case .rejected(let reason): rejected[reason, default: 0] += 1
        case .unprocessed(let fault): unprocessed[fault, default: 0] += 1
        }
    }

    /// `{"total":…,"accepted":…,"rejected":{"Reason":n,…},"unprocessed":{"fault":n,…}}`, keys sorted.
    public func json() -> String {
        func object(_ pairs: [(String, Int)]) -> String {
            "{" + pairs.sorted { $0.0 < $1.0 }.map { JSONText.quoted($0.0) + ":" + String($0.1) }.joined(separator: ",")
                + "}"
        }
        return "{\"total\":\(total),\"accepted\":\(accepted),\"rejected\":"
            + object(rejected.map { ($0.key.rawValue, $0.value) }) + ",\"unprocessed\":"
            + object(unprocessed.map { ($0.key, $0.value) }) + "}"
    }
}
