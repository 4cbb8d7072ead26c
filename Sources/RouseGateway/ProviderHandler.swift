import Logging
import RouseAPNs
import RouseClock
import RouseHTTP2

/// One provider connection on the APNs-compatible API: the same rules as APNs (shared with the mock through
/// `APNsRequestValidator`), then the store thread decides about the device token and stores the push.
/// Loop-confined, like every `HTTP2ConnectionHandler`.
final class ProviderHandler: HTTP2ConnectionHandler {
    private let core: GatewayCore
    private var auth: ProviderConnectionAuth
    private let keys: ProviderKeyCache
    private let connection: HTTP2Connection
    private let configuredStreams: Int
    private var advertisedStreams: Int
    private let oneStreamUntilToken: Bool

    /// A handler; token connections advertise one stream until a valid token: "APNs allows only one stream
    /// until you post a request with a valid authentication token" [SEND].
    init(
        core: GatewayCore, auth: ProviderConnectionAuth, keys: ProviderKeyCache, connection: HTTP2Connection,
        configuredStreams: Int, oneStreamUntilToken: Bool
    ) {
        self.core = core
        self.auth = auth
        self.keys = keys
        self.connection = connection
        self.configuredStreams = configuredStreams
        self.oneStreamUntilToken = oneStreamUntilToken
        advertisedStreams =
            oneStreamUntilToken ? auth.maxConcurrentStreams(configured: configuredStreams) : configuredStreams
        if advertisedStreams != configuredStreams {
            // Set while the factory runs, so it is the first SETTINGS frame's value: the client's first flight is
            // held to one stream, as on APNs.
            connection.setMaxConcurrentStreams(UInt32(advertisedStreams))
        }
    }

    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
        let now = core.clock.wallMilliseconds
        let headers = request.headers.map { (name: $0.name, value: $0.value) }
        let echoed = APNsRequestValidator.echoedID(headers)
        // The active keys as of at most a second ago, once per request. A key revoked since this connection bound it:
        // APNs asks providers to "close all connections" then; until they do, every push on it is refused.
        let active = keys.registry()
        if let keyID = auth.boundKeyID, active[keyID] == nil {
            core.metrics.pushIn(
                type: request.header("apns-push-type"), outcome: APNsReason.invalidProviderToken.rawValue)
            return ProviderResponse.reject(stream, reason: .invalidProviderToken, apnsID: echoed)
        }
        // Any other key a request uses (a later key of the same team, the current one) is checked too.
        let result = APNsRequestValidator.validate(
            method: request.method, path: request.path, headers: headers,
            duplicatePseudoHeaders: !request.duplicatePseudoHeaders.isEmpty, bodyLength: request.bodyLength,
            auth: &auth, now: APNsTime(milliseconds: now), isKeyActive: { active[$0] != nil })
        let desired = auth.maxConcurrentStreams(configured: configuredStreams)
        if oneStreamUntilToken, desired != advertisedStreams {
            advertisedStreams = desired
            connection.setMaxConcurrentStreams(UInt32(desired))
        }
        switch result {
        case .failure(let reason):
            core.metrics.pushIn(type: request.header("apns-push-type"), outcome: reason.rawValue)
            ProviderResponse.reject(stream, reason: reason, apnsID: echoed)
        case .success(let accepted):
            // A valid token or certificate: the authentication deadline no longer applies.
            connection.markAuthenticated()
            let submission = PushSubmission(
                token: accepted.deviceToken.lowercased(), headers: accepted.headers, payload: request.body,
                apnsID: accepted.headers.apnsID ?? APNsID.random(), receivedAt: now)
            core.submitPush(submission, stream: stream)
        }
    }

    func connectionClosed() {}

    /// The provider certificate as the APNs rules read it.
    static func certificate(_ peer: PeerCertificate?) -> ProviderCertificate? {
        guard let peer else { return nil }
        let verification: ProviderCertificate.Verification
        switch peer.verification {
        case .ok: verification = .ok
        case .expired: verification = .expired
        case .notYetValid: verification = .notYetValid
        case .unknownIssuer: verification = .unknownCA
        case .other(_, let message): verification = .failed(message)
        }
        return ProviderCertificate.reading(
            subjectUID: peer.subjectUID, extensions: peer.extensions, verification: verification)
    }
}
