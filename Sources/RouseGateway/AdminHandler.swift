import FoundationEssentials
import RouseAPNs
import RouseHTTP2
import RouseSystem
import RouseText
import Synchronization

/// Read-only admin views over the store and the metrics.
///
/// Lists are bounded (`?limit=N`, at most 1000, default 100): `/v1/devices` and `/v1/tokens` are pages
/// (`?after=CURSOR`, with a `next-page` response header naming the next page while there is one), `/v1/pending` the
/// oldest pushes. No request reads a whole table. Device tokens are shown as their
/// first 8 hex digits unless the request asks for them (`?reveal=tokens`).
struct AdminView: Sendable {
    let store: any GatewayStore
    let metrics: GatewayMetrics
    let core: GatewayCore
    /// The public listeners, whose budget hits `/metrics` shows.
    let listeners: [(name: String, server: HTTP2Server)]

    /// Most items on one page.
    static let maxPage = 1000
    /// Items on a page when the request does not say.
    static let defaultPage = 100

    /// One answer of the admin endpoint.
    struct Answer: Sendable {
        var status: Int
        var contentType: String
        var body: [UInt8]
        var nextPage: String?
    }

    func answer(method: String, path fullPath: String) -> Answer {
        let json = "application/json"
        func error(_ status: Int, _ code: String, _ detail: String? = nil) -> Answer {
            let extra = detail.map { ",\"detail\":\(JSONText.quoted($0))" } ?? ""
            return Answer(status: status, contentType: json, body: Array("{\"error\":\"\(code)\"\(extra)}".utf8))
        }
        guard method == "GET" else { return error(405, "methodNotAllowed") }
        let (path, query) = Self.split(fullPath)
        let limit: Int
        if let text = query["limit"] {
            guard let n = Int(text), (1...Self.maxPage).contains(n) else {
                return error(400, "badLimit", "limit is 1-\(Self.maxPage)")
            }
            limit = n
        } else {
            limit = Self.defaultPage
        }
        let after = query["after"]
        let reveal = query["reveal"] == "tokens"
        do {
            switch path {
            case "/health":
                return Answer(status: 200, contentType: json, body: Array("{\"status\":\"ok\"}".utf8))
            case "/metrics":
                metrics.setPending(try store.read { try $0.pendingTotal() })
                let memory = HTTP2Server.sessionMemory
                metrics.setHTTP2SessionMemory(sessions: memory.sessions, bytes: memory.bytes)
                metrics.setTimerEntries(listeners.reduce(0) { $0 + $1.server.timerEntries })
                for listener in listeners {
                    metrics.recordLimitCounts(listener: listener.name, listener.server.limitCounts)
                }
                return Answer(status: 200, contentType: "text/plain; version=0.0.4", body: metrics.render())
            case "/v1/devices":
                let (devices, counts, reports) = try store.read { t in
                    let devices = try t.devices(after: after, limit: limit)
                    let ids = devices.map(\.id)
                    return (
                        devices, try t.pendingCounts(deviceIDs: ids),
                        try t.handlerReports(deviceIDs: ids)
                    )
                }
                let body = DeviceJSON.list(devices, pending: counts, handlers: reports)
                return self.page(path, body, count: devices.count, limit: limit, last: devices.last?.id, query: query)
            case "/v1/tokens":
                let offset = Int(after ?? "0") ?? -1
                guard offset >= 0 else { return error(400, "badCursor", "after is the number from a next-page link") }
                let tokens = try store.read { try $0.tokens(offset: offset, limit: limit) }
                let items = tokens.map { token in
                    let shown = reveal ? token.token : String(token.token.prefix(8)) + "…"
                    return "{\"token\":\(JSONText.quoted(shown)),\"device\":\(JSONText.quoted(token.deviceID)),"
                        + "\"topic\":\(JSONText.quoted(token.topic)),\"createdAt\":\(token.createdAt),"
                        + "\"revokedAt\":\(token.revokedAt.map(String.init) ?? "null")}"
                }
                let body = "[" + items.joined(separator: ",") + "]"
                return self.page(
                    path, body, count: tokens.count, limit: limit, last: "\(offset + tokens.count)", query: query)
            case "/v1/pending":
                let pushes = try store.read { try $0.pendingList(deviceID: query["device"], limit: limit) }
                let items = pushes.map { push in
                    "{\"id\":\"\(push.id)\",\"device\":\(JSONText.quoted(push.deviceID)),"
                        + "\"topic\":\(JSONText.quoted(push.topic)),"
                        + "\"pushType\":\(push.pushType.map(JSONText.quoted) ?? "null"),"
                        + "\"apnsID\":\(JSONText.quoted(push.apnsID)),\"expiresAt\":\(push.expiresAt),"
                        + "\"receivedAt\":\(push.receivedAt),\"bytes\":\(push.payload.count)}"
                }
                return Answer(
                    status: 200, contentType: json, body: Array(("[" + items.joined(separator: ",") + "]").utf8))
            default:
                return error(404, "notFound")
            }
        } catch {
            return Answer(
                status: 500, contentType: json,
                body: Array("{\"error\":\"storage\",\"detail\":\(JSONText.quoted("\(error)"))}".utf8))
        }
    }

    /// A list page, with the next page's path while the page was full.
    private func page(_ path: String, _ body: String, count: Int, limit: Int, last: String?, query: [String: String])
        -> Answer
    {
        var next: String?
        if count == limit, let last {
            var items = ["limit=\(limit)", "after=\(Self.percentEncoded(last))"]
            if let reveal = query["reveal"] { items.append("reveal=\(Self.percentEncoded(reveal))") }
            next = path + "?" + items.joined(separator: "&")
        }
        return Answer(status: 200, contentType: "application/json", body: Array(body.utf8), nextPage: next)
    }

    /// The path and its query parameters (percent-decoded; a malformed escape leaves the value as it is).
    static func split(_ fullPath: String) -> (path: String, query: [String: String]) {
        guard let mark = fullPath.firstIndex(of: "?") else { return (fullPath, [:]) }
        var query: [String: String] = [:]
        for pair in fullPath[fullPath.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0])
            let value = parts.count > 1 ? String(parts[1]) : ""
            query[key] = PercentEncoding.decode(value) ?? value
        }
        return (String(fullPath[..<mark]), query)
    }

    static func percentEncoded(_ text: String) -> String {
        PercentEncoding.encode(text)
    }
}

/// The JSON device list of the admin view (`/v1/devices`) and `rouse gateway devices list --json`.
package enum DeviceJSON {
    /// `[{"id":…,"authentication":…,"createdAt":…,"revokedAt":…,"pending":…,"handlers":[{"topic":…,
    /// "strikes":…,"voipBlocked":…,"reportedAt":…}]}]`.
    package static func list(_ devices: [DeviceRecord], pending: [String: Int], handlers: [HandlerReport]) -> String {
        let byDevice = Dictionary(grouping: handlers, by: \.deviceID)
        let items = devices.map { device in
            let reports = (byDevice[device.id] ?? []).sorted { $0.topic < $1.topic }.map { report in
                "{\"topic\":\(JSONText.quoted(report.topic)),\"strikes\":\(report.strikes),"
                    + "\"voipBlocked\":\(report.voipBlocked),\"reportedAt\":\(report.reportedAt)}"
            }
            return "{\"id\":\(JSONText.quoted(device.id)),\"authentication\":\"\(device.authentication.rawValue)\","
                + "\"createdAt\":\(device.createdAt),\"revokedAt\":\(device.revokedAt.map(String.init) ?? "null"),"
                + "\"pending\":\(pending[device.id] ?? 0),\"handlers\":[" + reports.joined(separator: ",") + "]}"
        }
        return "[" + items.joined(separator: ",") + "]"
    }
}

/// The admin endpoint: `GET /health`, `/metrics` (Prometheus text), `/v1/devices`, `/v1/tokens`,
/// `/v1/pending`. Store reads run off the event loop, one at a time on one queue; more than
/// `AdminQueue.maxWaiting` waiting get 503.
final class AdminHandler: HTTP2ConnectionHandler {
    private let view: AdminView
    private let queue: AdminQueue

    init(view: AdminView, queue: AdminQueue) {
        self.view = view
        self.queue = queue
    }

    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
        let view = self.view
        let method = request.method
        let path = request.path
        let accepted = queue.run {
            let answer = view.answer(method: method, path: path)
            var headers = [HTTP2Header("content-type", answer.contentType)]
            if let next = answer.nextPage { headers.append(HTTP2Header("next-page", next)) }
            stream.respond(status: answer.status, headers: headers, body: answer.body)
        }
        if !accepted {
            stream.respond(
                status: 503, headers: [HTTP2Header("content-type", "application/json")],
                body: Array(#"{"error":"busy","detail":"admin requests are answered one at a time"}"#.utf8))
        }
    }

    func connectionClosed() {}
}

/// One admin job at a time, in order, off the event loops; a bounded number waiting.
///
/// A thread runs the jobs while there are any and ends when none is left; not a `DispatchQueue`, whose worker pool,
/// once started, wakes the whole process every second for the rest of its life (see LoopExecutor).
final class AdminQueue: Sendable {
    /// Admin requests waiting at most (beyond, 503).
    static let maxWaiting = 16
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var draining = false
    }
    private let state = Mutex(State())
    private let waiting = Atomic<Int>(0)

    /// Queues `job`; false when `maxWaiting` are already waiting.
    func run(_ job: @escaping @Sendable () -> Void) -> Bool {
        guard waiting.add(1, ordering: .relaxed).newValue <= Self.maxWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            return false
        }
        let start = state.withLock { state -> Bool in
            state.jobs.append(job)
            defer { state.draining = true }
            return !state.draining
        }
        if start {
            Sys.detachedThread(name: "rouse-gateway-admin") { [self] in drain() }
        }
        return true
    }

    /// Runs the queued jobs in order until none is left.
    private func drain() {
        while let job = state.withLock({ state -> (@Sendable () -> Void)? in
            guard !state.jobs.isEmpty else {
                state.draining = false
                return nil
            }
            return state.jobs.removeFirst()
        }) {
            job()
            waiting.subtract(1, ordering: .relaxed)
        }
    }
}
