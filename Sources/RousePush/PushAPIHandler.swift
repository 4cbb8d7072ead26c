import FoundationEssentials
import RouseAPNs
import RousePushCore

/// An answer of the API, whatever the HTTP version that carries it.
package struct PushAPIResponse: Sendable, Equatable {
    /// HTTP status.
    package var status: Int
    /// Extra headers (`content-type` included).
    package var headers: [(String, String)]
    /// Body.
    package var body: [UInt8]

    /// A JSON answer.
    static func json(_ status: Int, _ text: String, headers: [(String, String)] = []) -> PushAPIResponse {
        PushAPIResponse(
            status: status, headers: [("content-type", "application/json")] + headers, body: Array((text + "\n").utf8))
    }

    /// An error answer: `{"error":"…"}`.
    static func error(_ status: Int, _ message: String, headers: [(String, String)] = []) -> PushAPIResponse {
        json(status, "{\"error\":" + JSONText.quoted(message) + "}", headers: headers)
    }

    package static func == (a: PushAPIResponse, b: PushAPIResponse) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map(\.0) == b.headers.map(\.0)
            && a.headers.map(\.1) == b.headers.map(\.1)
    }
}

/// The API's routes on top of the service, shared by the HTTP/1.1 and the h2c listeners: a request in, exactly one
/// response out (synchronously for errors, health and metrics; when the outcomes are in for pushes).
package struct PushAPIHandler: Sendable {
    let service: PushService

    /// A handler for `service`.
    package init(service: PushService) {
        self.service = service
    }

    /// Handles one request; `respond` is called exactly once, on any thread.
    package func handle(
        method: String, target: String, body: [UInt8], respond: @escaping @Sendable (PushAPIResponse) -> Void
    ) {
        let route: PushAPIRoute
        switch PushAPIRoute.match(method: method, target: target) {
        case .success(let r): route = r
        case .failure(let error):
            respond(.error(error.status, error.message, headers: error.allow.map { [("allow", $0)] } ?? []))
            return
        }
        switch route {
        case .health:
            let c = service.configuration
            respond(
                .json(
                    200,
                    "{\"status\":\"ok\",\"apps\":\(c.apps.count),\"pools\":\(service.poolCount),"
                        + "\"pending\":\(service.pending)}"))
        case .metrics:
            service.refreshPoolMetrics()
            respond(
                PushAPIResponse(
                    status: 200, headers: [("content-type", "text/plain; version=0.0.4")],
                    body: service.metrics.render()))
        case .push:
            let request: PushAPIRequest
            do {
                request = try PushAPIRequest.parse(json: body)
            } catch {
                respond(.error(400, error.message))
                return
            }
            submit([request], respond: respond) { outcomes in
                let outcome = outcomes[0]
                return .json(outcome.httpStatus, outcome.json)
            }
        case .batch:
            let limit = service.configuration.limits?.maxBatch ?? 1000
            let requests: [PushAPIRequest]
            do {
                requests = try PushAPIRequest.parseBatch(json: body, limit: limit)
            } catch {
                if error.message.hasPrefix("batch of") {
                    service.metrics.limitHit(.batch)
                    respond(.error(413, error.message))
                } else {
                    respond(.error(400, error.message))
                }
                return
            }
            submit(requests, respond: respond) { outcomes in
                .json(200, "{\"results\":[" + outcomes.map(\.json).joined(separator: ",") + "]}")
            }
        case .fastPath(let app, let typeName, let token):
            let type = APNsPushType(rawValue: typeName)
            guard type.isKnown else {
                respond(.error(404, "unknown push type '\(typeName)' in the path"))
                return
            }
            guard service.hasApp(app) else {
                respond(.error(404, "no app named '\(app)'"))
                return
            }
            let request = PushAPIRequest(app: app, token: token, type: type, payload: body.isEmpty ? nil : body)
            submit([request], respond: respond) { outcomes in
                let outcome = outcomes[0]
                return .json(outcome.httpStatus, outcome.json)
            }
        }
    }

    private func submit(
        _ requests: [PushAPIRequest], respond: @escaping @Sendable (PushAPIResponse) -> Void,
        render: @escaping @Sendable ([PushAPIOutcome]) -> PushAPIResponse
    ) {
        if let refusal = service.send(requests, completion: { respond(render($0)) }) {
            respond(
                .error(
                    refusal.status, refusal.message,
                    headers: refusal.retryAfter.map { [("retry-after", "\($0)")] } ?? []))
        }
    }
}
