import Logging
import RouseAPNs
import Synchronization

/// The mock APNs engine: decides, for each request the HTTP/2 kernel hands it, what real APNs would answer,
/// injects scripted faults, and records every push. Pure: no sockets, no clock reads (callers pass `now`).
///
/// Thread-safe: shared state (faults, device registry, records, rate counters) lives in one `Mutex`;
/// per-connection state lives in the `MockConnection` value the kernel owns.
///
/// Order of checks for a request (auth and connection errors before header errors before payload errors
/// before device-token state, as a front end that authenticates first would do; faults come first):
/// 1. scripted faults (GOAWAY, REFUSED_STREAM, TCP reset, blackhole, 5xx bursts; latency is added);
/// 2. `:method` (405), `:path` (404 BadPath, 400 MissingDeviceToken / BadDeviceToken), DuplicateHeaders;
/// 3. credentials: certificate (BadCertificate, BadCertificateEnvironment) or provider token
///    (MissingProviderToken, InvalidProviderToken, UnrelatedKeyIdInToken, BadEnvironmentKeyIdInToken,
///    ExpiredProviderToken, TooManyProviderTokenUpdates);
/// 4. header syntax: BadMessageId, BadExpirationDate, BadPriority, InvalidPushType, BadTopic,
///    BadCollapseId, background priority;
/// 5. topic against the credential: MissingTopic, TopicDisallowed;
/// 6. payload: PayloadEmpty, PayloadTooLarge;
/// 7. device token: BadDeviceToken (unknown / other environment), DeviceTokenNotForTopic, 410 Unregistered,
///    410 ExpiredToken; then the per-token rate (429 TooManyRequests).
///
/// Wiring, in the HTTP/2 kernel's per-connection handler (all calls for one connection on one thread):
/// ```swift
/// let certificate = peer.map {
///     ProviderCertificate.reading(subjectUID: $0.subjectUID, extensions: $0.extensions, verification: …)
/// }
/// var state = mock.openConnection(info: MockConnectionInfo(id: info.id, remoteAddress: info.remoteAddress,
///                                                          certificate: certificate))
/// // First SETTINGS: MAX_CONCURRENT_STREAMS = state.advertisedMaxConcurrentStreams (1 for token connections).
/// let decision = mock.handle(request, connection: &state, now: APNsTime(milliseconds: unixMilliseconds))
/// if let limit = decision.advertiseMaxConcurrentStreams { connection.setMaxConcurrentStreams(UInt32(limit)) }
/// switch decision.action {
/// case .respond(let response): // after response.delayMilliseconds; then decision.goAwayAfterResponse, if any
/// case .goAway(let code, let lastStreamID, let debugData): // GOAWAY; do not answer this stream
/// case .resetStream(let code): // RST_STREAM
/// case .resetConnection: // TCP reset
/// case .blackhole: // stop reading and writing
/// }
/// ```
public final class MockAPNs: Sendable {
    private struct FaultSlot: Sendable {
        var rule: MockFaultRule
        var fired = 0
    }

    private struct Burst: Sendable {
        var reason: APNsReason
        var status: Int
        var remaining: Int
    }

    private struct State: Sendable {
        var keys: APNsKeyRegistry
        var devices: DeviceTokenRegistry
        var rateLimit: MockRateLimit?
        var faults: [FaultSlot]
        var burst: Burst?
        var requestNumber = 0
        var records: RecordBuffer
        var recordedSinceClear = 0
        var sequence = 0
        var rateWindows: [DeviceTokenKey: (start: Int64, count: Int)] = [:]
        var statistics = MockStatistics()
        /// `waitForRecords` callers: resumed (outside the lock) when enough records exist or their deadline passes.
        var waiters: [UInt64: (count: Int, continuation: CheckedContinuation<[PushRecord]?, Never>)] = [:]
        var nextWaiter: UInt64 = 0
        /// Waiters whose deadline passed before they registered.
        var expiredWaiters: Set<UInt64> = []
    }

    /// Rate windows are swept when more tokens than this have one.
    static let rateWindowSweepThreshold = 200_000

    /// Result of the fault step.
    private enum FaultVerdict {
        case none
        case action(MockFaultAction, name: String)
        case burst(APNsReason, status: Int)
    }

    /// The environment the mock answers for.
    public let environment: APNsEnvironment
    /// MAX_CONCURRENT_STREAMS for authenticated connections.
    public let maxConcurrentStreams: Int
    /// Whether the stream limit drops to 1 after a rejection.
    public let dropStreamLimitAfterRejection: Bool
    private let startedAt: APNsTime
    private let logger: Logger
    private let onRecord: (@Sendable (PushRecord) -> Void)?
    private let state: Mutex<State>

    /// An engine.
    ///
    /// - Parameters:
    ///   - startedAt: the wall-clock start, the origin of fault time windows.
    ///   - onRecord: called (outside the lock, on the handling thread) for every record, e.g. to print
    ///     `--json` lines.
    public init(
        configuration: MockAPNsConfiguration,
        startedAt: APNsTime,
        logger: Logger = Logger(label: "rouse.mock-apns"),
        onRecord: (@Sendable (PushRecord) -> Void)? = nil
    ) {
        environment = configuration.environment
        maxConcurrentStreams = configuration.maxConcurrentStreams
        dropStreamLimitAfterRejection = configuration.dropStreamLimitAfterRejection
        self.startedAt = startedAt
        self.logger = logger
        self.onRecord = onRecord
        state = Mutex(
            State(
                keys: configuration.keys,
                devices: configuration.devices,
                rateLimit: configuration.perTokenRateLimit,
                faults: configuration.faults.map { FaultSlot(rule: $0) },
                records: RecordBuffer(limit: configuration.recordLimit)
            )
        )
    }

    // MARK: Connections and requests

    /// State for a new connection; advertise `advertisedMaxConcurrentStreams` in the first SETTINGS (1 for
    /// token connections until a valid token: "APNs allows only one stream until you post a request with a
    /// valid authentication token").
    public func openConnection(info: MockConnectionInfo) -> MockConnection {
        let keys = state.withLock { $0.keys }
        let auth = ProviderConnectionAuth(serverEnvironment: environment, keys: keys, certificate: info.certificate)
        return MockConnection(
            info: info,
            auth: auth,
            advertisedMaxConcurrentStreams: auth.maxConcurrentStreams(configured: maxConcurrentStreams)
        )
    }

    /// Decides what to do with one complete request on `connection`.
    public func handle(_ request: MockRequest, connection: inout MockConnection, now: APNsTime) -> MockDecision {
        connection.requestCount += 1
        let pathToken = try? APNsRules.deviceToken(fromPath: request.path).get()
        let sinceStart = now.milliseconds &- startedAt.milliseconds
        var (verdict, latency) = state.withLock { state in
            Self.evaluateFaults(&state, token: pathToken, sinceStart: sinceStart)
        }

        var goAwayAfter: MockGoAwayFrame?
        switch verdict {
        case .none: break
        case .burst(let reason, let status):
            let response = errorResponse(reason: reason, status: status, apnsID: echoedID(request), timestamp: nil)
            finish(
                request, connection: &connection, token: pathToken, now: now, status: status,
                outcome: .rejected(reason),
                apnsID: response.apnsID, uniqueID: nil)
            return decision(.respond(response.response.delayed(latency)), rejected: status, connection: &connection)
        case .action(let action, let name):
            logger.debug("fault fired", metadata: ["fault": "\(name)", "conn-id": "\(connection.info.id)"])
            switch action {
            case .refusedStream:
                record(unprocessed: "refusedStream", request, connection: &connection, token: pathToken, now: now)
                return MockDecision(action: .resetStream(errorCode: MockHTTP2ErrorCode.refusedStream))
            case .tcpReset:
                record(unprocessed: "tcpReset", request, connection: &connection, token: pathToken, now: now)
                return MockDecision(action: .resetConnection)
            case .blackhole:
                record(unprocessed: "blackhole", request, connection: &connection, token: pathToken, now: now)
                return MockDecision(action: .blackhole)
            case .goAway(let goAway):
                let last: Int32
                switch goAway.lastStreamID {
                case .current: last = request.streamID
                case .previous: last = request.streamID > 2 ? request.streamID - 2 : 0
                case .id(let id): last = id
                }
                let frame = MockGoAwayFrame(
                    errorCode: goAway.errorCode, lastStreamID: last, debugData: goAway.debugData)
                if last < request.streamID {
                    record(unprocessed: "goAway", request, connection: &connection, token: pathToken, now: now)
                    return MockDecision(
                        action: .goAway(errorCode: frame.errorCode, lastStreamID: last, debugData: frame.debugData))
                }
                goAwayAfter = frame
            case .latency(let milliseconds):
                latency += milliseconds
                verdict = .none
            case .status:
                break  // Turned into `.burst` by `evaluateFaults`.
            }
        }

        var result = process(request, token: pathToken, connection: &connection, now: now)
        result.response.delayMilliseconds = latency
        var decision = decision(.respond(result.response), rejected: result.response.status, connection: &connection)
        decision.goAwayAfterResponse = goAwayAfter
        return decision
    }

    // MARK: Faults at run time

    /// Adds a fault rule (it applies from the next request).
    public func addFault(_ rule: MockFaultRule) {
        state.withLock { $0.faults.append(FaultSlot(rule: rule)) }
    }

    /// Removes the fault rules with this id; returns how many were removed.
    @discardableResult
    public func removeFault(id: String) -> Int {
        state.withLock { state in
            let before = state.faults.count
            state.faults.removeAll { $0.rule.id == id }
            return before - state.faults.count
        }
    }

    /// Removes every fault rule and ends any running status burst.
    public func clearFaults() {
        state.withLock { state in
            state.faults.removeAll()
            state.burst = nil
        }
    }

    /// The active fault rules.
    public func faults() -> [MockFaultRule] { state.withLock { $0.faults.map(\.rule) } }

    /// Changes the device-token registry at run time.
    public func updateDevices(_ body: (inout DeviceTokenRegistry) -> Void) {
        state.withLock { body(&$0.devices) }
    }

    /// Changes the key registry at run time (new connections only: "Adding a topic requires new connections").
    public func updateKeys(_ body: (inout APNsKeyRegistry) -> Void) {
        state.withLock { body(&$0.keys) }
    }

    // MARK: Records

    /// The kept records, oldest first.
    public func records() -> [PushRecord] { state.withLock { $0.records.snapshot } }

    /// Counters since the engine started (not reset by `clearRecords`).
    public func statistics() -> MockStatistics { state.withLock { $0.statistics } }

    /// The kept records with a sequence number above `sequence`, oldest first (for polling admin clients).
    public func records(after sequence: Int) -> [PushRecord] {
        state.withLock { $0.records.snapshot.filter { $0.sequence > sequence } }
    }

    /// How many records were made since the last `clearRecords()` (including ones dropped by the limit).
    public func recordCount() -> Int { state.withLock { $0.recordedSinceClear } }

    /// Forgets all records (sequence numbers keep counting).
    public func clearRecords() {
        state.withLock { state in
            state.records.removeAll()
            state.recordedSinceClear = 0
        }
    }

    /// Waits until at least `count` records were made since the last clear, or throws `.timeout`. Woken by the
    /// record itself, not by polling.
    public func waitForRecords(count: Int, timeout: Duration) async throws -> [PushRecord] {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let deadline = Task {
            try await Task.sleep(for: timeout)
            self.expireWaiter(id)
        }
        defer {
            deadline.cancel()
            _ = state.withLock { $0.expiredWaiters.remove(id) }
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<[PushRecord]?, Never>) in
            let (snapshot, expired) = state.withLock { state -> ([PushRecord]?, Bool) in
                if state.recordedSinceClear >= count { return (state.records.snapshot, false) }
                if state.expiredWaiters.remove(id) != nil { return (nil, true) }
                state.waiters[id] = (count, continuation)
                return (nil, false)
            }
            if let snapshot {
                continuation.resume(returning: snapshot)
            } else if expired {
                continuation.resume(returning: nil)
            }
        }
        if let result { return result }
        let made = state.withLock { $0.recordedSinceClear }
        throw MockAPNsError.timeout("\(made) of \(count) records after \(timeout)")
    }

    /// Resumes a waiter whose deadline passed with `nil`.
    private func expireWaiter(_ id: UInt64) {
        let waiter = state.withLock { state in
            let waiter = state.waiters.removeValue(forKey: id)
            if waiter == nil { state.expiredWaiters.insert(id) }
            return waiter
        }
        waiter?.continuation.resume(returning: nil)
    }

    /// All kept records as a JSON array (admin endpoint).
    public func recordsJSON() -> String {
        "[" + records().map { $0.jsonLine() }.joined(separator: ",") + "]"
    }
}

// MARK: - Request processing

extension MockAPNs {
    struct Processed {
        var response: MockResponse
        var apnsID: String
    }

    private struct Built {
        var response: MockResponse
        var apnsID: String
    }

    private func echoedID(_ request: MockRequest) -> String? {
        APNsRequestValidator.echoedID(request.headers)
    }

    /// Steps 2 to 7 of the documented order.
    private func process(_ request: MockRequest, token: Substring?, connection: inout MockConnection, now: APNsTime)
        -> Processed
    {
        let apnsID = echoedID(request)
        func reject(_ reason: APNsReason) -> Processed {
            let built = errorResponse(reason: reason, status: reason.status ?? 400, apnsID: apnsID, timestamp: nil)
            finish(
                request, connection: &connection, token: token, now: now, status: built.response.status,
                outcome: .rejected(reason), apnsID: built.apnsID, uniqueID: nil)
            return Processed(response: built.response, apnsID: built.apnsID)
        }
        let deviceToken: Substring
        // The token as the record keeps it: the validator's string, not a second copy of the path's characters.
        let tokenString: String
        let headers: APNsNotificationHeaders
        switch APNsRequestValidator.validate(
            method: request.method, path: request.path, headers: request.headers,
            duplicatePseudoHeaders: request.duplicatePseudoHeaders, bodyLength: request.bodyLength,
            auth: &connection.auth, now: now)
        {
        case .success(let accepted):
            tokenString = accepted.deviceToken
            deviceToken = Substring(tokenString)
            headers = accepted.headers
        case .failure(let reason): return reject(reason)
        }
        let topic = headers.topic ?? ""

        // Step 7 and the record, under one lock.
        let id = apnsID ?? APNsID.random()
        let uniqueID = environment == .sandbox ? APNsID.random() : nil
        let rejection = state.withLock { state -> DeviceTokenRegistry.Rejection? in
            if let rejection = state.devices.check(token: deviceToken, topic: topic, environment: environment) {
                return rejection
            }
            if let limit = state.rateLimit {
                let key = DeviceTokenKey(deviceToken)
                var window = state.rateWindows[key] ?? (now.milliseconds, 0)
                if now.milliseconds &- window.start >= limit.windowMilliseconds { window = (now.milliseconds, 0) }
                window.count += 1
                state.rateWindows[key] = window
                if state.rateWindows.count > Self.rateWindowSweepThreshold {
                    // Bound memory with many distinct tokens: forget windows that have ended.
                    state.rateWindows = state.rateWindows.filter {
                        now.milliseconds &- $0.value.start < limit.windowMilliseconds
                    }
                }
                if window.count > limit.maxRequests { return DeviceTokenRegistry.Rejection(reason: .tooManyRequests) }
            }
            return nil
        }
        if let rejection {
            let built = errorResponse(
                reason: rejection.reason, status: rejection.reason.status ?? 400, apnsID: id,
                timestamp: rejection.timestamp)
            finish(
                request, connection: &connection, token: token, now: now, status: built.response.status,
                outcome: .rejected(rejection.reason), apnsID: id, uniqueID: nil, tokenString: tokenString)
            return Processed(response: built.response, apnsID: id)
        }
        var responseHeaders = [(name: "apns-id", value: id)]
        if let uniqueID { responseHeaders.append((name: "apns-unique-id", value: uniqueID)) }
        finish(
            request, connection: &connection, token: token, now: now, status: 200, outcome: .accepted, apnsID: id,
            uniqueID: uniqueID, tokenString: tokenString)
        return Processed(response: MockResponse(status: 200, headers: responseHeaders, body: []), apnsID: id)
    }

    /// An APNs error response: `apns-id`, `content-type: application/json`, `{"reason":…}` (+ timestamp).
    private func errorResponse(reason: APNsReason, status: Int, apnsID: String?, timestamp: Int64?) -> Built {
        let id = apnsID ?? APNsID.random()
        let response = MockResponse(
            status: status,
            headers: [(name: "apns-id", value: id), (name: "content-type", value: "application/json")],
            body: JSONText.errorBody(reason: reason, timestamp: timestamp)
        )
        return Built(response: response, apnsID: id)
    }

    /// Applies the stream-limit rules after a decision.
    private func decision(_ action: MockAction, rejected status: Int, connection: inout MockConnection) -> MockDecision
    {
        if dropStreamLimitAfterRejection {
            if status == 200 {
                connection.droppedAfterRejection = false
            } else if status != 410 {
                connection.droppedAfterRejection = true
            }
        }
        let configured = connection.droppedAfterRejection ? 1 : maxConcurrentStreams
        let desired = connection.auth.maxConcurrentStreams(configured: configured)
        var decision = MockDecision(action: action)
        if desired != connection.advertisedMaxConcurrentStreams {
            connection.advertisedMaxConcurrentStreams = desired
            decision.advertiseMaxConcurrentStreams = desired
        }
        return decision
    }

    private func record(
        unprocessed fault: String, _ request: MockRequest, connection: inout MockConnection, token: Substring?,
        now: APNsTime
    ) {
        finish(
            request, connection: &connection, token: token, now: now, status: nil, outcome: .unprocessed(fault),
            apnsID: nil, uniqueID: nil)
    }

    private func finish(
        _ request: MockRequest,
        connection: inout MockConnection,
        token: Substring?,
        now: APNsTime,
        status: Int?,
        outcome: PushRecord.Outcome,
        apnsID: String?,
        uniqueID: String?,
        tokenString: String? = nil
    ) {
        var record = PushRecord(
            sequence: 0,
            time: now,
            connectionID: connection.info.id,
            streamID: request.streamID,
            method: request.method,
            path: request.path,
            deviceToken: tokenString ?? token.map(String.init),
            headers: PushRecord.redacted(request.headers, cache: &connection.redaction),
            payload: request.body,
            status: status,
            outcome: outcome,
            apnsID: apnsID,
            apnsUniqueID: uniqueID
        )
        var ready: [(CheckedContinuation<[PushRecord]?, Never>, [PushRecord])] = []
        record = state.withLock { state in
            state.sequence += 1
            record.sequence = state.sequence
            state.recordedSinceClear += 1
            state.records.append(record)
            state.statistics.count(record.outcome)
            if !state.waiters.isEmpty {
                for (id, waiter) in state.waiters where state.recordedSinceClear >= waiter.count {
                    state.waiters[id] = nil
                    ready.append((waiter.continuation, state.records.snapshot))
                }
            }
            return record
        }
        for (continuation, snapshot) in ready { continuation.resume(returning: snapshot) }
        onRecord?(record)
    }

    /// Step 1: counts the request and picks the faults that fire. Terminal actions: the first matching
    /// rule wins; latency rules add up.
    private static func evaluateFaults(_ state: inout State, token: Substring?, sinceStart: Int64) -> (
        FaultVerdict, Int
    ) {
        state.requestNumber += 1
        if var burst = state.burst {
            burst.remaining -= 1
            state.burst = burst.remaining > 0 ? burst : nil
            return (.burst(burst.reason, status: burst.status), 0)
        }
        if state.faults.isEmpty { return (.none, 0) }
        var latency = 0
        var verdict = FaultVerdict.none
        for index in state.faults.indices {
            let slot = state.faults[index]
            if let times = slot.rule.times, slot.fired >= times { continue }
            guard
                slot.rule.match.matches(requestNumber: state.requestNumber, deviceToken: token, sinceStart: sinceStart)
            else { continue }
            if case .latency(let milliseconds) = slot.rule.action {
                latency += milliseconds
                state.faults[index].fired += 1
                continue
            }
            guard case .none = verdict else { continue }
            state.faults[index].fired += 1
            if case .status(let reason, let status, let count) = slot.rule.action {
                if count > 1 { state.burst = Burst(reason: reason, status: status, remaining: count - 1) }
                verdict = .burst(reason, status: status)
            } else {
                verdict = .action(slot.rule.action, name: slot.rule.id)
            }
        }
        return (verdict, latency)
    }
}

extension MockResponse {
    fileprivate func delayed(_ milliseconds: Int) -> MockResponse {
        var copy = self
        copy.delayMilliseconds = milliseconds
        return copy
    }
}
