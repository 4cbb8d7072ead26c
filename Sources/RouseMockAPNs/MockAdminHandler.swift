import RouseHTTP2

/// The mock's admin endpoint (h2c), for tests in other processes and users' CI:
///
/// - `GET /records[?after=SEQ]` — JSON array of push records (accepted, rejected, unprocessed);
/// - `GET /wait?count=N&timeout_ms=MS` — waits until N records were made, then as `/records` (408 on timeout);
/// - `DELETE /records` — forget the records;
/// - `GET /stats` — counts by outcome and reason;
/// - `GET /faults`, `POST /faults` (a faults file as body: its rules are added), `DELETE /faults`;
/// - `GET /health` — `ok`.
final class MockAdminHandler: HTTP2ConnectionHandler {
    let mock: MockAPNs

    init(mock: MockAPNs) {
        self.mock = mock
    }

    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
        let (path, query) = Self.split(request.path)
        let json = [HTTP2Header("content-type", "application/json")]
        switch (request.method, path) {
        case ("GET", "/health"):
            stream.respond(status: 200, body: Array("ok\n".utf8))
        case ("GET", "/records"):
            let after = query["after"].flatMap { Int($0) }
            let records = after.map { mock.records(after: $0) } ?? mock.records()
            stream.respond(status: 200, headers: json, body: Self.array(records))
        case ("DELETE", "/records"):
            mock.clearRecords()
            stream.respond(status: 204)
        case ("GET", "/wait"):
            guard let count = query["count"].flatMap({ Int($0) }), count >= 0 else {
                stream.respond(status: 400, body: Array("count must be a non-negative integer\n".utf8))
                return
            }
            let timeout = query["timeout_ms"].flatMap { Int($0) } ?? 10_000
            Self.respondWhenRecorded(mock: mock, count: count, timeout: .milliseconds(timeout), stream: stream)
        case ("GET", "/stats"):
            stream.respond(status: 200, headers: json, body: Array(mock.statistics().json().utf8))
        case ("GET", "/faults"):
            let lines = mock.faults().map { "\($0)" }
            stream.respond(status: 200, body: Array((lines.joined(separator: "\n") + "\n").utf8))
        case ("POST", "/faults"):
            do {
                let rules = try MockFaultScript.parse(json: request.body)
                for rule in rules { mock.addFault(rule) }
                stream.respond(status: 201, body: Array("added \(rules.count) fault rule(s)\n".utf8))
            } catch {
                stream.respond(status: 400, body: Array("\(error)\n".utf8))
            }
        case ("DELETE", "/faults"):
            mock.clearFaults()
            stream.respond(status: 204)
        default:
            stream.respond(status: 404, body: Array("unknown admin path \(request.method) \(path)\n".utf8))
        }
    }

    func connectionClosed() {}

    /// Answers `stream` once `count` records exist (or 408 after `timeout`), off the event loop.
    static func respondWhenRecorded(mock: MockAPNs, count: Int, timeout: Duration, stream: HTTP2Stream) {
        Task.detached {
            do {
                let records = try await mock.waitForRecords(count: count, timeout: timeout)
                stream.respond(
                    status: 200, headers: [HTTP2Header("content-type", "application/json")], body: array(records))
            } catch {
                stream.respond(status: 408, body: Array("\(error)\n".utf8))
            }
        }
    }

    static func array(_ records: [PushRecord]) -> [UInt8] {
        Array(("[" + records.map { $0.jsonLine() }.joined(separator: ",") + "]\n").utf8)
    }

    /// Splits `/path?a=1&b=2`.
    static func split(_ target: String) -> (String, [String: String]) {
        guard let q = target.firstIndex(of: "?") else { return (target, [:]) }
        var query: [String: String] = [:]
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            query[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return (String(target[..<q]), query)
    }
}
