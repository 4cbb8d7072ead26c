import Logging
import RouseAPNs
import RouseClock
import RouseCurl
import Synchronization

/// The curl transport: each push is a libcurl transfer on a shared multi handle; retries and outcomes follow
/// the same `SenderRetryPolicy` as the native engine.
///
/// libcurl 7.88 reports no GOAWAY and cannot tell a refused stream from a processed one once a request was
/// sent, so only transfers that provably never left (connect, TLS, proxy failures) are resent; everything
/// else without a status is `failed(processed: unknown)`. There is no per-connection view: one token is
/// shared by the whole client and switched at most once per 20 minutes (except after
/// `ExpiredProviderToken`, when the old token is useless anyway).
final class CurlEngine: PushEngine {
    private struct TokenSlot: Sendable {
        var state: ProviderTokenState
        var token: ConnectionToken?
    }

    private let client: CurlHTTPClient
    private let configuration: APNsSenderConfiguration
    private let proxy: CurlProxyOptions?
    private let tls: CurlTLSOptions
    private let signer: (@Sendable (Int64) -> String)?
    private let tokens: Mutex<TokenSlot>
    private let clock: any RouseClock
    private let logger: Logger
    private let metrics: SenderMetrics
    private let unfinished = Atomic<Int>(0)
    private let consecutiveErrors = Atomic<Int>(0)
    private let shuttingDown = Atomic<Bool>(false)
    private let jitter = Mutex(JitterSource(seed: UInt64.random(in: 1...(.max))))

    init(
        configuration: APNsSenderConfiguration, proxy: String?, signer: (@Sendable (Int64) -> String)?,
        clock: any RouseClock, logger: Logger, metrics: SenderMetrics
    ) throws {
        client = try CurlHTTPClient(
            configuration: CurlHTTPClient.Configuration(
                maxConcurrentStreams: 1000, maxHostConnections: max(1, configuration.connections)),
            logger: logger)
        self.configuration = configuration
        self.proxy = proxy.map { CurlProxyOptions(url: $0) }
        var tls = CurlTLSOptions(caFile: configuration.trustRootsFile)
        switch configuration.credentials {
        case .token: break
        case .certificatePEM(let certificate, let key):
            tls.clientCertificate = .pem(certificateFile: certificate, keyFile: key)
        case .pkcs12(let file, let password):
            tls.clientCertificate = .pkcs12(file: file, password: password)
        }
        self.tls = tls
        self.signer = signer
        tokens = Mutex(TokenSlot(state: ProviderTokenState(policy: configuration.pool.tokenPolicy)))
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
    }

    var unfinishedCount: Int { unfinished.load(ordering: .relaxed) }

    func submit(id: UInt64, push: APNsPush, lane: PushLane, deadline: Duration, completion: @escaping PushCompletion) {
        unfinished.add(1, ordering: .relaxed)
        let end = clock.now.offset + deadline
        Task {
            let (outcome, attempts, retries) = await run(push, end: end)
            unfinished.subtract(1, ordering: .relaxed)
            completion(id, outcome, attempts, retries)
        }
    }

    func shutdown() async {
        shuttingDown.store(true, ordering: .relaxed)
        // Real time, whatever the sender's clock: a test's manual clock must not hold a shutdown for ever.
        let realTime = SystemClock()
        let giveUp = realTime.deadline(after: .seconds(5))
        while unfinished.load(ordering: .relaxed) > 0 && realTime.now < giveUp {
            try? await Task.sleep(for: .milliseconds(5))
        }
        await client.shutdown()
    }

    private func authorization(now: PoolInstant, forceNew generation: Int?) -> (String, Int)? {
        guard let signer else { return nil }
        return tokens.withLock { slot in
            if let generation {
                slot.state.expired(generation: generation, now: now.wall, signer: signer)
                slot.token = nil
            }
            let token = slot.state.token(for: slot.token, now: now.wall, signer: signer)
            slot.token = token
            return (token.jwt, token.generation)
        }
    }

    private func run(_ push: APNsPush, end: Duration) async -> (PushOutcome, Int, Int) {
        let policy = configuration.pool.retry
        var attempts = 0
        var unprocessed = 0
        var statusRetries = 0
        var tokenRetried = false
        var expiredGeneration: Int?
        var lastRejection: PushOutcome?
        while true {
            if shuttingDown.load(ordering: .relaxed) {
                return (lastRejection ?? .failed(.shutdown, processed: .no), attempts, unprocessed + statusRetries)
            }
            let now = PoolInstant(reading: clock)
            let remaining = end - now.monotonic
            let retries = unprocessed + statusRetries + (tokenRetried ? 1 : 0)
            guard remaining > .milliseconds(1) else {
                return (
                    lastRejection ?? .failed(.deadline("not sent before the deadline"), processed: .no), attempts,
                    retries
                )
            }
            let auth = authorization(now: now, forceNew: expiredGeneration)
            expiredGeneration = nil
            var headers: [(name: String, value: String)] = []
            for field in push.headerFields(authorization: auth?.0) where !field.name.hasPrefix(":") {
                headers.append((field.name, field.value))
            }
            let request = CurlRequest(
                method: "POST", url: configuration.endpoint.url + push.path, headers: headers, body: push.payload,
                connectTimeout: min(configuration.connectTimeout, remaining), timeout: remaining, tls: tls, proxy: proxy
            )
            attempts += 1
            metrics.attempt()
            let result: AttemptResult
            do {
                let response = try await client.send(request)
                result = .response(status: response.status, apnsID: response.header("apns-id"), body: response.body)
            } catch let error as CurlError {
                if error.isTimeout && error.processing != .notProcessed {
                    return (.failed(.deadline("\(error)"), processed: .unknown), attempts, retries)
                }
                result =
                    error.processing == .notProcessed
                    ? .notProcessed("\(error)", goAwayReason: nil) : .failed("\(error)")
            } catch {
                result = .failed("\(error)")
            }
            var backoff = Duration.zero
            if case .response(let status, _, _) = result {
                if status == 429 || status >= 500 {
                    let errors = consecutiveErrors.add(1, ordering: .relaxed).newValue
                    backoff = policy.backoff(
                        errors: max(errors, statusRetries + 1), unit: jitter.withLock { $0.unit() })
                } else if status == 200 {
                    consecutiveErrors.store(0, ordering: .relaxed)
                }
            }
            let decision = policy.decide(
                result, unprocessedResends: unprocessed, statusRetries: statusRetries, tokenRetried: tokenRetried,
                backoff: backoff, remaining: end - clock.now.offset)
            switch decision {
            case .finish(let outcome):
                if case .notProcessed = result, case .failed(let error, _) = outcome, error.isKind(.tooManyResends(""))
                {
                    return (.failed(.connect(error.detail), processed: .no), attempts, retries)
                }
                return (outcome, attempts, retries)
            case .resend:
                unprocessed += 1
                // A transfer that never left: give the connection a moment instead of spinning.
                try? await clock.sleep(for: policy.backoff(errors: unprocessed, unit: jitter.withLock { $0.unit() }))
            case .resendAfter(let delay):
                if case .response(let status, _, let body) = result {
                    let parsed = APNsErrorBody.parse(body)
                    lastRejection = .rejected(
                        reason: parsed?.reason ?? APNsReason(rawValue: "HTTP\(status)"), timestamp: parsed?.timestamp)
                }
                statusRetries += 1
                try? await clock.sleep(for: delay)
            case .resendWithNewToken:
                tokenRetried = true
                lastRejection = .rejected(reason: .expiredProviderToken, timestamp: nil)
                expiredGeneration = auth?.1 ?? 0
            }
        }
    }
}
