import FoundationEssentials
import Logging
import RouseAPNs
import RouseClock
import RouseEventLoop
import RousePushCore
import RouseSender

/// What makes two apps share one pool of connections: the same endpoint, credential, trust roots and size.
struct PushPoolKey: Hashable, Sendable, CustomStringConvertible {
    var endpoint: String
    var credential: String
    var caFile: String?
    var connections: Int

    init(_ app: PushServiceConfiguration.App) {
        endpoint = app.endpoint
        if let keyFile = app.keyFile {
            credential = "token:\(app.teamID ?? ""):\(app.keyID ?? ""):\(keyFile)"
        } else {
            credential = "cert:\(app.certFile ?? ""):\(app.certKeyFile ?? ""):\(app.certPassword?.isEmpty == false)"
        }
        caFile = app.caFile
        connections = app.connections ?? 1
    }

    /// For logs and the `pool` label: endpoint and who signs, never a password.
    var description: String {
        let who =
            credential.hasPrefix("token:")
            ? credential.split(separator: ":").prefix(3).joined(separator: ":")
            : "cert:" + (credential.split(separator: ":").dropFirst().first.map(String.init) ?? "")
        return "\(endpoint) \(who)"
    }
}

/// One warm pool: an `APNsSender` on the native engine for one credential and endpoint, with PINGs only while
/// busy (an idle pool sleeps; a connection's health is checked on use).
final class PushPool: Sendable {
    let key: PushPoolKey
    let sender: APNsSender
    /// Key files and certificates as read when the pool was made: a reload that finds them changed makes a new pool.
    let fingerprint: [UInt8]

    /// A pool for `app`; its bulk connections run on `loop` when given (the API's loop: no hand-off between threads
    /// per push), else on a thread of its own. VoIP keeps its own thread either way.
    init(key: PushPoolKey, app: PushServiceConfiguration.App, loop: EventLoop?, logger: Logger)
        throws(PushServiceError)
    {
        self.key = key
        fingerprint = Self.fingerprint(app)
        guard let endpoint = SenderEndpoint.parse(app.endpoint) else {
            throw .configuration("endpoint '\(app.endpoint)' must be production, sandbox or https://host:port")
        }
        let credentials: SenderCredentials
        if let keyFile = app.keyFile, let keyID = app.keyID, let teamID = app.teamID {
            guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
                throw .configuration("cannot read the key file \(keyFile)")
            }
            credentials = .token(keyPEM: pem, keyID: keyID, teamID: teamID)
        } else if let certFile = app.certFile {
            guard FileManager.default.isReadableFile(atPath: certFile) else {
                throw .configuration("cannot read the certificate \(certFile)")
            }
            if certFile.hasSuffix(".p12") || certFile.hasSuffix(".pfx") {
                credentials = .pkcs12(file: certFile, password: app.certPassword ?? "")
            } else {
                credentials = .certificatePEM(certificateFile: certFile, keyFile: app.certKeyFile ?? certFile)
            }
        } else {
            throw .configuration("no credential")
        }
        var configuration = APNsSenderConfiguration(endpoint: endpoint, credentials: credentials)
        configuration.trustRootsFile = app.caFile
        configuration.connections = key.connections
        configuration.defaultDeadline = .milliseconds(Int64(app.deadlineMs ?? 10_000))
        configuration.pool.pingWhileIdle = false
        var poolLogger = logger
        poolLogger[metadataKey: "pool"] = "\(key)"
        do {
            sender = try APNsSender(configuration: configuration, logger: poolLogger, bulkLoop: loop)
        } catch {
            throw .configuration("\(key): \(error)")
        }
    }

    /// The contents of the key, certificate and CA files an app names: a pool is kept across a reload only when they
    /// did not change.
    static func fingerprint(_ app: PushServiceConfiguration.App) -> [UInt8] {
        var bytes: [UInt8] = []
        for file in [app.keyFile, app.certFile, app.certKeyFile, app.caFile].compactMap({ $0 }) {
            bytes += Array(file.utf8) + [0]
            bytes += FileManager.default.contents(atPath: file).map { Array($0) } ?? []
        }
        return bytes
    }

    /// Waits until every push it took has its outcome (a retired pool after a reload), then closes it.
    func retire() async {
        while sender.unfinishedCount > 0 { try? await Task.sleep(for: .milliseconds(20)) }
        await sender.shutdown()
    }
}

extension PushAPIOutcome {
    /// The API's view of a sender's result.
    init(_ result: PushResult) {
        let ms = result.latency.inMilliseconds
        switch result.outcome {
        case .delivered(let id):
            self.init(
                token: result.push.deviceToken, apnsID: id, kind: .delivered, attempts: result.attempts,
                retries: result.retries, latencyMs: ms)
        case .rejected(let reason, let timestamp):
            self.init(
                token: result.push.deviceToken, apnsID: result.push.apnsID, kind: .rejected, reason: reason.rawValue,
                timestamp: timestamp, preflight: result.refusedBeforeSending, attempts: result.attempts,
                retries: result.retries, latencyMs: ms)
        case .failed(let error, let processed):
            self.init(
                token: result.push.deviceToken, apnsID: result.push.apnsID, kind: .failed,
                error: error.description, processed: processed.rawValue, attempts: result.attempts,
                retries: result.retries, latencyMs: ms)
        }
    }
}
