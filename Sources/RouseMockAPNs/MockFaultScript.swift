import RouseAPNs

/// The `--faults FILE` format: a JSON list of rules, each a match, one action, and an optional count.
///
/// ```json
/// {
///   "faults": [
///     {"id": "shutdown-at-500", "match": {"nth": 500}, "action": {"goAway": {"reason": "Shutdown"}}, "times": 1},
///     {"match": {"every": 100}, "action": {"refusedStream": {}}},
///     {"match": {"token": "a1b2c3"}, "action": {"latency": {"ms": 250}}},
///     {"match": {"afterMs": 10000, "untilMs": 12000}, "action": {"blackhole": {}}},
///     {"match": {"nth": 1000}, "action": {"status": {"status": 503, "reason": "ServiceUnavailable", "count": 50}}},
///     {"match": {"nth": 1}, "action": {"goAway": {"code": "NO_ERROR", "lastStreamID": 0,
///                                                 "reason": "BadCertificateEnvironment"}}},
///     {"match": {"every": 5000}, "action": {"tcpReset": {}}},
///     {"match": {"nth": 42}, "action": {"idleTimeout": {}}},
///     {"match": {"nth": 43}, "action": {"shutdown": {}}}
///   ]
/// }
/// ```
/// - `match` (optional; all given criteria must hold): `token` (hex), `nth` (the n-th request the server
///   handles, 1-based, all connections), `every` (every n-th request), `afterMs`/`untilMs` (window in ms
///   since the mock started, `until` exclusive).
/// - `action`, exactly one key:
///   - `goAway`: `code` (HTTP/2 error name such as `"NO_ERROR"`, or a number; default 0), `lastStreamID`
///     (`"current"` (default: the request is answered, then GOAWAY), `"previous"`, or a number such as 0:
///     the request is not processed), and `reason` (debug data `{"reason":…}`) or `debug` (raw text);
///   - `refusedStream`, `tcpReset`, `blackhole`: `{}`;
///   - `latency`: `{"ms": N}` added before the answer;
///   - `status`: `{"reason": R, "status": S, "count": K}` answers K requests with R (S defaults to R's
///     status, K to 1): 500/503 bursts or any reason by script;
///   - `shutdown`, `idleTimeout`: GOAWAY NO_ERROR with `{"reason":"Shutdown"}` / `{"reason":"IdleTimeout"}`
///     after answering the request.
/// - `times` (optional): how many times the rule fires; `id` (optional): a name for removing it at run time.
public enum MockFaultScript {
    private struct File: Decodable {
        var faults: [Rule]
    }

    private struct Rule: Decodable {
        var id: String?
        var match: Match?
        var action: Action
        var times: Int?
    }

    private struct Match: Decodable {
        var token: String?
        var nth: Int?
        var every: Int?
        var afterMs: Int64?
        var untilMs: Int64?
    }

    private struct Action: Decodable {
        var goAway: GoAway?
        var refusedStream: Empty?
        var tcpReset: Empty?
        var blackhole: Empty?
        var latency: Latency?
        var status: Status?
        var shutdown: Empty?
        var idleTimeout: Empty?
    }

    private struct Empty: Decodable {}
    private struct Latency: Decodable { var ms: Int }
    private struct Status: Decodable {
        var reason: String
        var status: Int?
        var count: Int?
    }
    private struct GoAway: Decodable {
        var code: CodeValue?
        var lastStreamID: StreamValue?
        var reason: String?
        var debug: String?
    }

    private enum CodeValue: Decodable {
        case number(UInt32)
        case name(String)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(UInt32.self) {
                self = .number(number)
            } else {
                self = .name(try container.decode(String.self))
            }
        }
    }

    private enum StreamValue: Decodable {
        case number(Int32)
        case name(String)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int32.self) {
                self = .number(number)
            } else {
                self = .name(try container.decode(String.self))
            }
        }
    }

    /// Parses the fault file format documented on this type; errors name the JSON path.
    public static func parse(json: [UInt8]) throws(MockAPNsError) -> [MockFaultRule] {
        let file: File
        switch JSONFileDecoding.decode(File.self, from: json) {
        case .success(let decoded): file = decoded
        case .failure(let failure): throw .badFaultsFile(failure.detail)
        }
        var rules: [MockFaultRule] = []
        for (index, rule) in file.faults.enumerated() {
            let at = "$.faults[\(index)]"
            let match = rule.match ?? Match()
            if let every = match.every, every <= 0 { throw .badFaultsFile("\(at).match.every: must be positive") }
            if let nth = match.nth, nth <= 0 { throw .badFaultsFile("\(at).match.nth: must be positive") }
            if let token = match.token, APNsRules.checkDeviceToken(token) != nil {
                throw .badFaultsFile("\(at).match.token: not an even number of hex digits")
            }
            if let times = rule.times, times <= 0 { throw .badFaultsFile("\(at).times: must be positive") }
            let action = try parseAction(rule.action, at: "\(at).action")
            rules.append(
                MockFaultRule(
                    id: rule.id ?? "fault-\(index)",
                    match: MockFaultMatch(
                        deviceToken: match.token,
                        nth: match.nth,
                        every: match.every,
                        afterMilliseconds: match.afterMs,
                        untilMilliseconds: match.untilMs
                    ),
                    action: action,
                    times: rule.times
                )
            )
        }
        return rules
    }

    private static func parseAction(_ action: Action, at: String) throws(MockAPNsError) -> MockFaultAction {
        var found: [MockFaultAction] = []
        if let goAway = action.goAway { found.append(.goAway(try parseGoAway(goAway, at: at + ".goAway"))) }
        if action.refusedStream != nil { found.append(.refusedStream) }
        if action.tcpReset != nil { found.append(.tcpReset) }
        if action.blackhole != nil { found.append(.blackhole) }
        if let latency = action.latency {
            guard latency.ms >= 0, latency.ms <= 3_600_000 else {
                throw .badFaultsFile("\(at).latency.ms: must be between 0 and 3600000")
            }
            found.append(.latency(milliseconds: latency.ms))
        }
        if let status = action.status {
            let reason = APNsReason(rawValue: status.reason)
            let code = status.status ?? reason.status ?? 500
            guard (100...599).contains(code) else { throw .badFaultsFile("\(at).status.status: not an HTTP status") }
            let count = status.count ?? 1
            guard count > 0 else { throw .badFaultsFile("\(at).status.count: must be positive") }
            found.append(.status(reason: reason, status: code, count: count))
        }
        if action.shutdown != nil { found.append(.shutdown) }
        if action.idleTimeout != nil { found.append(.idleTimeout) }
        guard found.count == 1, let only = found.first else {
            throw .badFaultsFile(
                "\(at): exactly one of goAway, refusedStream, tcpReset, blackhole, latency, status, shutdown, "
                    + "idleTimeout is required (found \(found.count))"
            )
        }
        return only
    }

    private static func parseGoAway(_ goAway: GoAway, at: String) throws(MockAPNsError) -> MockGoAway {
        var code = MockHTTP2ErrorCode.noError
        switch goAway.code {
        case .none: break
        case .number(let number): code = number
        case .name(let name):
            guard let named = MockHTTP2ErrorCode.byName[name.uppercased()] else {
                throw .badFaultsFile("\(at).code: unknown HTTP/2 error code '\(name)'")
            }
            code = named
        }
        var last = MockLastStreamID.current
        switch goAway.lastStreamID {
        case .none: break
        case .number(let id):
            guard id >= 0 else { throw .badFaultsFile("\(at).lastStreamID: must not be negative") }
            last = .id(id)
        case .name("current"): last = .current
        case .name("previous"): last = .previous
        case .name(let other):
            throw .badFaultsFile("\(at).lastStreamID: '\(other)' is not current, previous or a number")
        }
        if goAway.reason != nil, goAway.debug != nil { throw .badFaultsFile("\(at): give reason or debug, not both") }
        if let reason = goAway.reason {
            return MockGoAway(errorCode: code, lastStreamID: last, reason: APNsReason(rawValue: reason))
        }
        return MockGoAway(errorCode: code, lastStreamID: last, debugData: Array((goAway.debug ?? "").utf8))
    }
}
