import Logging
import RouseAPNs
import RouseClock
import RouseEventLoop
import RouseHTTP2
import Synchronization

/// An APNs provider: sends pushes over a pool of HTTP/2 connections (native or curl transport), with token
/// or certificate auth, and reports exactly one outcome per push within its deadline.
///
/// ```swift
/// let sender = try APNsSender(configuration: APNsSenderConfiguration(
///     endpoint: .apple(.sandbox), credentials: .token(keyPEM: pem, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")))
/// let outcome = await sender.send(APNsPush(deviceToken: hex, topic: "com.example.app.voip", pushType: .voip,
///                                          expiration: 0, payload: Array(#"{"aps":{}}"#.utf8)))
/// await sender.shutdown()
/// ```
public final class APNsSender: Sendable {
    /// The configuration it was made with.
    public let configuration: APNsSenderConfiguration
    /// For certificate auth: the topics the certificate allows (pre-flight checks them).
    public let certificateTopics: Set<String>?
    private let certificateEnvironments: Set<APNsEnvironment>?
    private let engine: any PushEngine
    private let metrics: SenderMetrics
    private let nextID = Atomic<UInt64>(0)
    private let logger: Logger
    /// Deadlines, retries, PINGs, token age and latency are read on it; tests may pass a `ManualClock`.
    private let clock: any RouseClock

    /// Makes a sender; reads and checks the credentials (a bad key or certificate throws here, not later).
    ///
    /// `bulkLoop` (native transport): the loop the bulk lane's connections run on, instead of a thread of the
    /// sender's own. A server that answers on that loop (rouse-pushd's API) then sends and gets its outcomes there
    /// by direct calls, no hand-off between threads. Its owner starts and stops it (after ``shutdown()``); its clock
    /// should be `clock`. The priority lane keeps its own thread.
    public init(
        configuration: APNsSenderConfiguration, logger: Logger = Logger(label: "rouse.sender"),
        clock: any RouseClock = SystemClock(), bulkLoop: EventLoop? = nil
    ) throws(SendError) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        metrics = SenderMetrics(label: configuration.endpoint.host)
        var signer: (@Sendable (Int64) -> String)?
        switch configuration.credentials {
        case .token(let pem, let keyID, let teamID):
            guard keyID.utf8.count == 10, teamID.utf8.count == 10 else {
                throw .credentials("key ID and team ID must be 10 characters (got '\(keyID)', '\(teamID)')")
            }
            do {
                let key = try ProviderToken.privateKey(pem: pem)
                _ = try ProviderToken(keyID: keyID, teamID: teamID, issuedAt: 0).signed(with: key)
                signer = { issuedAt in
                    (try? ProviderToken(keyID: keyID, teamID: teamID, issuedAt: issuedAt).signed(with: key)) ?? ""
                }
            } catch {
                throw .credentials("the .p8 key cannot be used: \(error)")
            }
            certificateTopics = nil
            certificateEnvironments = nil
        case .certificatePEM(let file, _), .pkcs12(let file, _):
            var password: String?
            if case .pkcs12(_, let p) = configuration.credentials { password = p }
            let certificate: ProviderCertificate
            do {
                let peer = try PeerCertificate.read(file: file, pkcs12Password: password)
                certificate = try ProviderCertificate(
                    subjectUID: peer.subjectUID, extensions: peer.extensions, verification: .ok)
            } catch {
                throw .credentials("certificate \(file): \(error)")
            }
            certificateTopics = Set(certificate.topics)
            certificateEnvironments = certificate.environments
        }
        do {
            switch configuration.transport {
            case .native:
                engine = try NativeEngine(
                    configuration: configuration, signer: signer, clock: clock, logger: logger, metrics: metrics,
                    bulkLoop: bulkLoop)
            case .curl(let proxy):
                engine = try CurlEngine(
                    configuration: configuration, proxy: proxy, signer: signer, clock: clock, logger: logger,
                    metrics: metrics)
            }
        } catch let error as SendError {
            throw error
        } catch {
            throw .configuration("cannot start the transport: \(error)")
        }
    }

    /// The lane a push uses by default: VoIP (and push-to-talk) on the priority lane, everything else bulk.
    public static func defaultLane(for push: APNsPush) -> PushLane {
        push.pushType == .voip || push.pushType == .pushtotalk ? .priority : .bulk
    }

    /// The pre-flight: the APNs reason this push would get on syntax and credentials alone, or nil.
    public func preflight(_ push: APNsPush) -> APNsReason? {
        if let reason = push.validate() { return reason }
        if let certificateTopics {
            if !push.pushType.allowedWithCertificate || !certificateTopics.contains(push.topic) {
                return .topicDisallowed
            }
            if let environment = configuration.endpoint.environment, let certificateEnvironments,
                !certificateEnvironments.contains(environment)
            {
                return .badCertificateEnvironment
            }
        }
        return nil
    }

    /// Sends one push; `completion` gets its result exactly once, within the deadline.
    public func send(
        _ push: APNsPush, lane: PushLane? = nil, deadline: Duration? = nil,
        completion: @escaping @Sendable (PushResult) -> Void
    ) {
        var push = push
        let clock = self.clock
        let started = clock.now
        let metrics = self.metrics
        // The pre-flight runs before the `apns-id` is made: an id made here is canonical by construction, and
        // checking it again was a tenth of the pre-flight's cost per push.
        let refusal = preflight(push)
        if push.apnsID == nil { push.apnsID = APNsID.random() }
        if let reason = refusal {
            let outcome = PushOutcome.rejected(reason: reason, timestamp: nil)
            metrics.finished(outcome, retries: 0, latency: .zero)
            completion(
                PushResult(
                    push: push, outcome: outcome, attempts: 0, retries: 0, latency: started.duration(to: clock.now),
                    refusedBeforeSending: true))
            return
        }
        let id = nextID.add(1, ordering: .relaxed).newValue
        let sent = push
        engine.submit(
            id: id, push: push, lane: lane ?? Self.defaultLane(for: push),
            deadline: deadline ?? configuration.defaultDeadline
        ) { _, outcome, attempts, retries in
            let latency = started.duration(to: clock.now)
            metrics.finished(outcome, retries: retries, latency: latency)
            completion(PushResult(push: sent, outcome: outcome, attempts: attempts, retries: retries, latency: latency))
        }
    }

    /// Sends one push and returns its result.
    public func sendDetailed(_ push: APNsPush, lane: PushLane? = nil, deadline: Duration? = nil) async -> PushResult {
        await withCheckedContinuation { c in send(push, lane: lane, deadline: deadline) { c.resume(returning: $0) } }
    }

    /// Sends one push and returns its outcome.
    public func send(_ push: APNsPush, lane: PushLane? = nil, deadline: Duration? = nil) async -> PushOutcome {
        await sendDetailed(push, lane: lane, deadline: deadline).outcome
    }

    /// Sends many pushes with at most `maxInFlight` unfinished at a time (backpressure: the sequence is read
    /// only as results come back). `onResult` runs once per push, on a transport thread; returns when every
    /// push has its result.
    public func sendAll(
        _ pushes: some Sequence<APNsPush>, maxInFlight: Int = 2000, lane: PushLane? = nil, deadline: Duration? = nil,
        onResult: @escaping @Sendable (PushResult) -> Void
    ) async {
        let gate = InFlightGate(limit: maxInFlight)
        for push in pushes {
            await gate.acquire()
            send(push, lane: lane, deadline: deadline) { result in
                onResult(result)
                gate.release()
            }
        }
        await gate.waitUntilDrained()
    }

    /// Sends `count` pushes, `push(i)` for i in 0..<count, with at most `maxInFlight` unfinished at a time, and
    /// returns when every push has its result. Unlike the `Sequence` form, the next push is made and submitted on
    /// the thread that delivered the previous one's outcome (so `push` must be cheap and thread-safe): no task
    /// hand-off per push. `onResult` runs once per push, on a transport thread.
    public func sendAll(
        count: Int, maxInFlight: Int = 2000, lane: PushLane? = nil, deadline: Duration? = nil,
        push: @escaping @Sendable (Int) -> APNsPush, onResult: @escaping @Sendable (PushResult) -> Void
    ) async {
        let feeder = BulkFeeder(count: max(0, count), limit: maxInFlight) { [self] index, feeder in
            send(push(index), lane: lane, deadline: deadline) { result in
                onResult(result)
                feeder.finished()
            }
        }
        await feeder.run()
    }

    /// Pushes submitted and not finished yet.
    public var unfinishedCount: Int { engine.unfinishedCount }

    /// Connections open now (the pool's size).
    public var openConnections: Int { metrics.openConnections }

    /// Provider tokens minted so far (native engine, token auth): the token refreshes.
    public var tokensMinted: Int { engine.tokensMinted }

    /// Fails pushes still waiting (`failed(shutdown, processed: no)`), lets in-flight ones finish (at most
    /// a few seconds) and closes the connections.
    public func shutdown() async {
        await engine.shutdown()
    }
}
