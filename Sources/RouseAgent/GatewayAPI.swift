import FoundationEssentials
import RouseCurl
import RouseText
import RouseWire
import Synchronization

/// How the agent reaches the gateway's device API and proves who it is.
package struct GatewayEndpoint: Sendable {
    /// Base URL, e.g. `https://gateway.example:2198`.
    package var baseURL: String
    /// Other gateway nodes sharing the first one's store (several nodes on PostgreSQL): the channel moves to the
    /// next one, in turn, when its node is unreachable or ends the channel.
    package var otherBaseURLs: [String] = []
    /// CA bundle for the gateway's certificate (nil: the system store).
    package var caFile: String?
    /// Device certificate and key (PEM) instead of a bearer credential.
    package var clientCertificate: (certificate: String, key: String)?
    /// TCP keepalive idle time on the channel connection.
    package var tcpKeepAlive: Duration = .seconds(60)

    /// An endpoint.
    package init(baseURL: String, caFile: String? = nil, clientCertificate: (certificate: String, key: String)? = nil) {
        self.baseURL = baseURL
        self.caFile = caFile
        self.clientCertificate = clientCertificate
    }

    /// Every node's base URL, the first one first.
    package var baseURLs: [String] { [baseURL] + otherBaseURLs }

    /// The host part of the URL (the reachability target).
    package var host: String {
        var rest = Substring(baseURL)
        if let range = rest.firstRange(ofText: "://") { rest = rest[range.upperBound...] }
        rest = rest.prefix { $0 != "/" }
        if rest.hasPrefix("[") { return String(rest.dropFirst().prefix { $0 != "]" }) }
        return String(rest.prefix { $0 != ":" })
    }
}

/// The device API requests (enroll, tokens, ack) and the channel request, over libcurl.
struct GatewayAPI: Sendable {
    let endpoint: GatewayEndpoint
    let curl: CurlHTTPClient
    /// Which of `endpoint.baseURLs` requests go to (the channel's state machine chooses).
    let choice = GatewayChoice()

    func request(_ method: String, _ path: String, credential: String?, body: String? = nil, stream: Bool = false)
        -> CurlRequest
    {
        var headers: [(name: String, value: String)] = []
        var tls = CurlTLSOptions(caFile: endpoint.caFile)
        if let certificate = endpoint.clientCertificate {
            tls.clientCertificate = .pem(certificateFile: certificate.certificate, keyFile: certificate.key)
        } else if let credential {
            headers.append((name: "authorization", value: "Bearer \(credential)"))
        }
        if body != nil { headers.append((name: "content-type", value: "application/json")) }
        return CurlRequest(
            method: method, url: endpoint.baseURLs[choice.index % endpoint.baseURLs.count] + path, headers: headers,
            body: Array((body ?? "").utf8),
            connectTimeout: .seconds(10),
            // A channel lives until closed; libcurl needs a finite bound (one day), the state machine closes earlier.
            timeout: stream ? .seconds(86400) : .seconds(15), tls: tls,
            tcpKeepAlive: stream ? endpoint.tcpKeepAlive : nil)
    }

    /// Sends `body` (when given) and reads the reply as `Reply` when the status is one of `accepted`; anything else,
    /// the status refused or a body that is not the reply, is an ``AgentError`` naming `what` with the status and
    /// body.
    func call<Reply: DeviceAPIMessage>(
        _ method: String, _ path: String, credential: String?, body: (some DeviceAPIMessage)?, accepted: Set<Int>,
        what: String, reply: Reply.Type
    ) async throws -> Reply {
        let response = try await curl.send(request(method, path, credential: credential, body: body?.json))
        guard accepted.contains(response.status), let value = try? Reply.decode(response.body) else {
            throw AgentError.gateway("\(what): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return value
    }

    /// Enrolls with a one-time secret (or a certificate: empty body); returns (deviceID, credential).
    func enroll(secret: String?) async throws -> (deviceID: String, credential: String?) {
        // Encoded by the model, not interpolated: a secret is text from a file or a command line.
        let reply = try await call(
            "POST", "/device/v1/enroll", credential: nil, body: secret.map(DeviceEnrollRequest.init(secret:)),
            accepted: [200, 201], what: "enroll", reply: DeviceEnrollReply.self)
        return (reply.deviceID, reply.credential)
    }

    /// The token for `topic` (created or existing).
    func token(topic: String, credential: String?) async throws -> String {
        try await call(
            "POST", "/device/v1/tokens", credential: credential, body: DeviceTokenRequest(topic: topic),
            accepted: [200, 201], what: "token \(topic)", reply: DeviceToken.self
        ).token
    }

    /// Acknowledges ids.
    func ack(_ ids: [String], credential: String?) async throws {
        _ = try await call(
            "POST", "/device/v1/ack", credential: credential, body: DeviceAckRequest(ids: ids), accepted: [200],
            what: "ack", reply: DeviceAckReply.self)
    }

    /// Reports the handlers' strikes and VoIP blocks.
    func reportHandlers(_ report: DeviceHandlerReport, credential: String?) async throws {
        _ = try await call(
            "POST", "/device/v1/handlers", credential: credential, body: report, accepted: [200], what: "handlers",
            reply: DeviceHandlerReportReply.self)
    }
}

extension GatewayEndpoint {
    /// Enrolls a device once, outside a running agent (`rouse agent enroll`): the same request as the agent's
    /// first start, with a one-time `secret` or the endpoint's client certificate. Throws ``AgentError`` when the
    /// gateway refused, the transport's error when it could not be reached.
    package func enroll(secret: String?) async throws -> (deviceID: String, credential: String?) {
        let curl = try CurlHTTPClient()
        do {
            let result = try await GatewayAPI(endpoint: self, curl: curl).enroll(secret: secret)
            await curl.shutdown()
            return result
        } catch {
            await curl.shutdown()
            throw error
        }
    }
}

/// The gateway node the agent talks to now, an index into `GatewayEndpoint.baseURLs` (shared by the channel and the
/// other requests).
final class GatewayChoice: Sendable {
    private let value = Atomic<Int>(0)
    var index: Int {
        get { value.load(ordering: .relaxed) }
        set { value.store(newValue, ordering: .relaxed) }
    }
}
