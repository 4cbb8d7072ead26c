/// The API's routes. The OpenAPI document (docs/push-api.yaml) lists exactly these; a test checks both ways.
package enum PushAPIRoute: Sendable, Equatable {
    /// `POST /v1/push`: one push as JSON, answered with its outcome.
    case push
    /// `POST /v1/batch`: `{"pushes":[…]}`, answered with `{"results":[…]}` in the same order.
    case batch
    /// `POST /v1/apps/{app}/{type}/{token}`: the body is the payload; app, push type and token from the path
    /// (for clients that can send only a body, such as Kamailio's `http_client`).
    case fastPath(app: String, type: String, token: String)
    /// `GET /health`.
    case health
    /// `GET /metrics`.
    case metrics

    /// The templates served, with their method, as the OpenAPI document writes them.
    package static let templates: [(method: String, path: String)] = [
        ("POST", "/v1/push"), ("POST", "/v1/batch"), ("POST", "/v1/apps/{app}/{type}/{token}"), ("GET", "/health"),
        ("GET", "/metrics"),
    ]

    /// What `method target` asks for: a route, or the status to answer (404 unknown path, 405 wrong method).
    package static func match(method: String, target: String) -> Result<PushAPIRoute, RouteError> {
        // On the UTF-8 bytes: splitting the target's Characters cost more than the rest of the routing under `perf`
        // (docs/push-service.md, "Speed").
        var path = Substring(target)
        if let q = path.utf8.firstIndex(of: UInt8(ascii: "?")) { path = path[..<q] }
        let parts = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        func part(_ i: Int) -> Substring { Substring(parts[i]) }
        func isPart(_ i: Int, _ word: StaticString) -> Bool {
            parts[i].elementsEqual(UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
        }
        let route: PushAPIRoute
        let allowed: String
        switch parts.count {
        case 2 where isPart(1, "health"):
            (route, allowed) = (.health, "GET")
        case 2 where isPart(1, "metrics"):
            (route, allowed) = (.metrics, "GET")
        case 3 where isPart(1, "v1") && isPart(2, "push"):
            (route, allowed) = (.push, "POST")
        case 3 where isPart(1, "v1") && isPart(2, "batch"):
            (route, allowed) = (.batch, "POST")
        case 6 where isPart(1, "v1") && isPart(2, "apps") && !parts[3].isEmpty && !parts[4].isEmpty:
            (route, allowed) = (
                .fastPath(app: String(part(3)), type: String(part(4)), token: String(part(5))), "POST"
            )
        default:
            return .failure(RouteError(status: 404, message: "no such path: \(path)", allow: nil))
        }
        guard method == allowed else {
            return .failure(RouteError(status: 405, message: "\(path) takes \(allowed), not \(method)", allow: allowed))
        }
        return .success(route)
    }

    /// A request no route takes.
    package struct RouteError: Error, Sendable, Equatable {
        /// 404 or 405.
        package var status: Int
        /// Why.
        package var message: String
        /// For 405: the `Allow` header.
        package var allow: String?
    }
}
