import RouseAPNs
import RouseHTTP2

/// Read-only admin views over the store and the metrics.
struct AdminView: Sendable {
    let store: any GatewayStore
    let metrics: GatewayMetrics
    let core: GatewayCore
    /// The public listeners, whose budget hits `/metrics` shows.
    let listeners: [(name: String, server: HTTP2Server)]

    /// Most pending pushes listed by `/v1/pending`.
    static let pendingListLimit = 1000

    func answer(method: String, path: String) -> (status: Int, contentType: String, body: [UInt8]) {
        let json = "application/json"
        guard method == "GET" else { return (405, json, Array("{\"error\":\"methodNotAllowed\"}".utf8)) }
        do {
            switch path {
            case "/health":
                return (200, json, Array("{\"status\":\"ok\"}".utf8))
            case "/metrics":
                let pending = try store.read { try $0.pendingCounts().values.reduce(0, +) }
                metrics.setPending(pending)
                for listener in listeners {
                    metrics.recordLimitCounts(listener: listener.name, listener.server.limitCounts)
                }
                return (200, "text/plain; version=0.0.4", metrics.render())
            case "/v1/devices":
                let (devices, counts, reports) = try store.read {
                    try ($0.devices(), $0.pendingCounts(), $0.handlerReports(deviceID: nil))
                }
                return (200, json, Array(DeviceJSON.list(devices, pending: counts, handlers: reports).utf8))
            case "/v1/tokens":
                let tokens = try store.read { try $0.tokens(deviceID: nil) }
                let items = tokens.map { token in
                    "{\"token\":\(JSONText.quoted(token.token)),\"device\":\(JSONText.quoted(token.deviceID)),"
                        + "\"topic\":\(JSONText.quoted(token.topic)),\"createdAt\":\(token.createdAt),"
                        + "\"revokedAt\":\(token.revokedAt.map(String.init) ?? "null")}"
                }
                return (200, json, Array(("[" + items.joined(separator: ",") + "]").utf8))
            case "/v1/pending":
                let pushes = try store.read { try $0.pendingList(deviceID: nil, limit: Self.pendingListLimit) }
                let items = pushes.map { push in
                    "{\"id\":\"\(push.id)\",\"device\":\(JSONText.quoted(push.deviceID)),"
                        + "\"topic\":\(JSONText.quoted(push.topic)),"
                        + "\"pushType\":\(push.pushType.map(JSONText.quoted) ?? "null"),"
                        + "\"apnsID\":\(JSONText.quoted(push.apnsID)),\"expiresAt\":\(push.expiresAt),"
                        + "\"receivedAt\":\(push.receivedAt),\"bytes\":\(push.payload.count)}"
                }
                return (200, json, Array(("[" + items.joined(separator: ",") + "]").utf8))
            default:
                return (404, json, Array("{\"error\":\"notFound\"}".utf8))
            }
        } catch {
            return (500, json, Array("{\"error\":\"storage\",\"detail\":\(JSONText.quoted("\(error)"))}".utf8))
        }
    }
}

/// The JSON device list of the admin view (`/v1/devices`) and `rouse gateway devices list --json`.
public enum DeviceJSON {
    /// `[{"id":…,"authentication":…,"createdAt":…,"revokedAt":…,"pending":…,"handlers":[{"topic":…,
    /// "strikes":…,"voipBlocked":…,"reportedAt":…}]}]`.
    public static func list(_ devices: [DeviceRecord], pending: [String: Int], handlers: [HandlerReport]) -> String {
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
/// `/v1/pending`. Store reads run off the event loop.
final class AdminHandler: HTTP2ConnectionHandler {
    private let view: AdminView

    init(view: AdminView) {
        self.view = view
    }

    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
        let view = self.view
        let method = request.method
        let path = request.path
        Task.detached {
            let answer = view.answer(method: method, path: path)
            stream.respond(
                status: answer.status, headers: [HTTP2Header("content-type", answer.contentType)], body: answer.body)
        }
    }

    func connectionClosed() {}
}
