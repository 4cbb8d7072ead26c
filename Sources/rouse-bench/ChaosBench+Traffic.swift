import Foundation
import RouseAPNs
import RouseAgentCore
import RouseCurl
import RouseGateway
import RouseHTTP2
import RouseWire
import Synchronization

/// What was pushed and what arrived, push by push (a push is its number `n`, carried in its payload).
actor ChaosLedger {
    struct Result {
        var accepted = 0
        /// Of them, pushes for the agents' handlers.
        var agentAccepted = 0
        var received = 0
        /// Pushes a handler logged.
        var handed = 0
        /// Pushes a handler logged more than once.
        var handedTwice = 0
        var lost = 0
        var twice = 0
        var refused = 0
        var refusedButDelivered = 0
        var unknown = 0
        var unknownDelivered = 0
        var notProcessedDelivered = 0
        var redelivered = 0
        var channels = 0
        var latencies: [Double] = []

        var clean: Bool {
            lost == 0 && twice == 0 && handedTwice == 0 && notProcessedDelivered == 0 && refusedButDelivered == 0
        }
    }

    enum Outcome {
        case accepted
        case refused(status: Int)
        /// Never sent or provably not processed (REFUSED_STREAM, above a GOAWAY, no connection).
        case notProcessed
        /// Sent, no answer: the link dropped or the node died mid-request.
        case unknown
    }

    private var sentAt: [Int: ContinuousClock.Instant] = [:]
    private var accepted: Set<Int> = []
    private var refused: Set<Int> = []
    private var notProcessed: Set<Int> = []
    private var unknown: Set<Int> = []
    /// Delivery ids under which each push arrived.
    private var deliveries: [Int: Set<String>] = [:]
    /// (device, delivery id) pairs whose acknowledgement the gateway answered 200.
    private var acknowledged: Set<String> = []
    private var receivedAfterAck = 0
    /// The pushes for the agents' handlers, and how many times a handler logged each.
    private var agentPushes: Set<Int> = []
    private var handed: [Int: Int] = [:]
    private var redelivered = 0
    private var channels = 0
    private var latencies: [Double] = []

    func sent(_ n: Int) { sentAt[n] = .now }

    func outcome(_ n: Int, _ outcome: Outcome) {
        switch outcome {
        case .accepted: accepted.insert(n)
        case .refused: refused.insert(n)
        case .notProcessed: notProcessed.insert(n)
        case .unknown: unknown.insert(n)
        }
    }

    func channelOpened() { channels += 1 }

    func agentPush(_ n: Int) { agentPushes.insert(n) }

    /// The handlers' logs as last read (push number → times logged).
    func absorb(handed counts: [Int: Int]) { handed = counts }

    private func arrived(_ n: Int) -> Bool { agentPushes.contains(n) ? handed[n] != nil : deliveries[n] != nil }

    /// Whether every push answered 200 has arrived.
    func drained() -> Bool { accepted.allSatisfy { arrived($0) } }

    func received(device: Int, id: String, n: Int) {
        let key = "\(device)/\(id)"
        if acknowledged.contains(key) { receivedAfterAck += 1 }
        if deliveries[n]?.contains(id) == true {
            redelivered += 1  // offered again before its acknowledgement landed: at least once, as promised
            return
        }
        if deliveries[n] == nil, let sent = sentAt[n] { latencies.append((ContinuousClock.now - sent).seconds * 1000) }
        deliveries[n, default: []].insert(id)
    }

    func acknowledged(device: Int, ids: [String]) {
        for id in ids { acknowledged.insert("\(device)/\(id)") }
    }

    func progress() -> (accepted: Int, received: Int) { (accepted.count, deliveries.count + handed.count) }

    func result() -> Result {
        var result = Result()
        result.accepted = accepted.count
        result.agentAccepted = accepted.intersection(agentPushes).count
        result.received = deliveries.count + handed.count
        result.handed = handed.count
        result.lost = accepted.filter { !arrived($0) }.count
        result.twice = deliveries.values.filter { $0.count > 1 }.count + receivedAfterAck
        result.handedTwice = handed.values.filter { $0 > 1 }.count
        result.refused = refused.count
        result.refusedButDelivered = refused.filter { arrived($0) }.count
        result.unknown = unknown.count
        result.unknownDelivered = unknown.filter { arrived($0) }.count
        result.notProcessedDelivered = notProcessed.filter { arrived($0) }.count
        result.redelivered = redelivered
        result.channels = channels
        result.latencies = latencies
        return result
    }
}

/// A device as an agent behaves: a channel to a running node (any: it does not know which nodes are up),
/// acknowledgements every 16 pushes and at each heartbeat, a channel that goes 6 s without a byte (three missed
/// heartbeats) given up, and a reconnection after 0.25–0.5 s, elsewhere.
struct ChaosDevice {
    let index: Int
    let credential: String
    let cluster: ChaosCluster
    let ledger: ChaosLedger
    let certs: String
    var random: SplitMix64

    init(index: Int, credential: String, cluster: ChaosCluster, ledger: ChaosLedger, certs: String, seed: UInt64) {
        self.index = index
        self.credential = credential
        self.cluster = cluster
        self.ledger = ledger
        self.certs = certs
        self.random = SplitMix64(seed: seed)
    }

    mutating func run() async {
        while !Task.isCancelled {
            let node = Int.random(in: 0..<(await cluster.count), using: &random)
            await channel(to: await cluster.address(node))
            try? await Task.sleep(for: .milliseconds(Int.random(in: 250...500, using: &random)))
        }
    }

    /// One channel, until it ends, stalls or the task is cancelled.
    private func channel(to address: String) async {
        guard let curl = try? CurlHTTPClient() else { return }
        let base = "https://\(address):\(ChaosCluster.devicePort)/device/v1"
        let tls = CurlTLSOptions(caFile: certs + "/ca.pem")
        let authorization = (name: "authorization", value: "Bearer \(credential)")
        var request = CurlRequest(
            url: base + "/channel", headers: [authorization], connectTimeout: .seconds(2),
            timeout: .seconds(24 * 3600), tls: tls)
        request.lowSpeed = CurlLowSpeed(bytesPerSecond: 1, duration: .seconds(6))
        var unacknowledged: [String] = []
        func acknowledge() async {
            guard !unacknowledged.isEmpty else { return }
            let ids = unacknowledged
            unacknowledged.removeAll()
            let body = "{\"ids\":[" + ids.map { JSONText.quoted($0) }.joined(separator: ",") + "]}"
            let response = try? await curl.send(
                CurlRequest(
                    method: "POST", url: base + "/ack",
                    headers: [authorization, (name: "content-type", value: "application/json")], body: Array(body.utf8),
                    connectTimeout: .seconds(2), timeout: .seconds(4), tls: tls))
            if response?.head.status == 200 { await ledger.acknowledged(device: index, ids: ids) }
        }
        do {
            let response = try await curl.stream(request)
            guard response.head.status == 200 else {
                await curl.shutdown()
                return
            }
            await ledger.channelOpened()
            var splitter = ChannelLineSplitter()
            reading: for try await chunk in response.body {
                for line in splitter.append(chunk) {
                    switch try ChannelRecord(line: line) {
                    case .push(let push):
                        unacknowledged.append(push.id)
                        await ledger.received(device: index, id: push.id, n: Self.number(push.payload))
                        if unacknowledged.count >= 16 { await acknowledge() }
                    case .heartbeat: await acknowledge()
                    case .replaced, .revoked, .shutdown: break reading
                    case .hello, .webpush, .unknown: continue
                    }
                }
            }
        } catch {
            // The node died, the link stalled or the record was garbage: this channel is over, another follows.
        }
        await curl.shutdown()
    }

    /// The push's number from its payload (`{"n":…}`, base64 on the channel); -1 when it is not there.
    static func number(_ payload: String) -> Int {
        struct Body: Decodable { let n: Int }
        guard let data = Data(base64Encoded: payload), let body = try? JSONDecoder().decode(Body.self, from: data)
        else { return -1 }
        return body.n
    }
}

/// The provider: `rate` pushes a second, shared in turn by the devices (alert pushes) and the agents' handlers (VoIP
/// pushes, once their token is known), each through a node picked at random
/// among those the benchmark knows to be running (a provider behind a load balancer), each with 4 s to be
/// answered (then its connection is given up: an unknown outcome), at most 64 at once.
struct ChaosProvider {
    let cluster: ChaosCluster
    let ledger: ChaosLedger
    let tokens: [String]
    let agents: ChaosAgents
    /// A provider token issued at the given UNIX second.
    let sign: @Sendable (Int64) -> String?
    let rate: Int
    var random: SplitMix64

    init(
        cluster: ChaosCluster, ledger: ChaosLedger, tokens: [String], agents: ChaosAgents,
        sign: @escaping @Sendable (Int64) -> String?,
        rate: Int, seed: UInt64
    ) {
        self.cluster = cluster
        self.ledger = ledger
        self.tokens = tokens
        self.agents = agents
        self.sign = sign
        self.rate = rate
        self.random = SplitMix64(seed: seed)
    }

    mutating func run(until end: ContinuousClock.Instant) async {
        let period = Duration.seconds(1) / rate
        var next = ContinuousClock.now
        let inFlight = InFlight()
        var jwt = (issued: Int64(0), token: "")
        var n = 0
        let agentCount = await agents.count
        await withTaskGroup(of: Void.self) { group in
            while next < end {
                try? await Task.sleep(until: next)
                next += period
                let now = Gateway.systemMilliseconds() / 1000
                // APNs refuses tokens older than an hour: a new one every 20 minutes.
                if now - jwt.issued >= 20 * 60, let signed = sign(now) {
                    jwt = (now, signed)
                }
                guard inFlight.enter(limit: 64) else { continue }
                let running = await cluster.running()
                guard let node = running.randomElement(using: &random) else {
                    inFlight.leave()
                    continue
                }
                let push = n
                n += 1
                let slot = push % (tokens.count + agentCount)
                let target: Target
                if slot < tokens.count {
                    target = Target(token: tokens[slot], topic: "com.example.rouse", type: "alert")
                } else if let token = await agents.token(slot - tokens.count) {
                    target = Target(token: token, topic: ChaosAgents.topic(slot - tokens.count) + ".voip", type: "voip")
                    await ledger.agentPush(push)
                } else {
                    inFlight.leave()
                    continue
                }
                let bearer = jwt.token
                let cluster = self.cluster
                let ledger = self.ledger
                group.addTask {
                    await Self.send(push, to: target, jwt: bearer, node: node, cluster: cluster, ledger: ledger)
                    inFlight.leave()
                }
            }
        }
    }

    /// Where a push goes.
    struct Target: Sendable {
        let token: String
        let topic: String
        let type: String
    }

    static func send(_ n: Int, to target: Target, jwt: String, node: Int, cluster: ChaosCluster, ledger: ChaosLedger)
        async
    {
        await ledger.sent(n)
        guard let client = await cluster.client(node) else {
            await ledger.outcome(n, .notProcessed)
            return
        }
        let request = HTTP2ClientRequest(
            path: "/3/device/\(target.token)", authority: "gateway",
            headers: [
                HTTP2Header("authorization", "bearer \(jwt)", neverIndex: true),
                HTTP2Header("apns-topic", target.topic), HTTP2Header("apns-push-type", target.type),
                HTTP2Header("apns-id", UUID().uuidString.lowercased()),
                HTTP2Header("apns-expiration", "\(Gateway.systemMilliseconds() / 1000 + 86_400)"),
            ], body: Array(#"{"n":\#(n)}"#.utf8))
        let watchdog = Task {
            try await Task.sleep(for: .seconds(4))
            await cluster.dropClient(node, client)
        }
        let result = await client.send(request)
        watchdog.cancel()
        switch result {
        case .response(200, _, _): await ledger.outcome(n, .accepted)
        case .response(let status, _, _): await ledger.outcome(n, .refused(status: status))
        case .notProcessed:
            await ledger.outcome(n, .notProcessed)
            await cluster.dropClient(node, client)
        case .failed:
            await ledger.outcome(n, .unknown)
            await cluster.dropClient(node, client)
        }
    }

    /// Pushes in flight, bounded.
    final class InFlight: Sendable {
        private let count = Atomic<Int>(0)

        func enter(limit: Int) -> Bool {
            guard count.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
                count.wrappingSubtract(1, ordering: .relaxed)
                return false
            }
            return true
        }

        func leave() { count.wrappingSubtract(1, ordering: .relaxed) }
    }
}
