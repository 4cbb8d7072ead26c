import Foundation
import RouseCurl
import RouseGateway
import RouseTestSupport
import RouseWire
import Synchronization
import Testing

/// Several `rouse-gateway` processes on one throwaway PostgreSQL cluster, as a deployment runs them: any node takes
/// provider pushes for any device; the device's channel is on one node; order, acks, collapse, expiration,
/// replacement, revocation, a node killed and PostgreSQL restarted, across nodes.
@Suite("Gateway nodes sharing PostgreSQL", .timeLimit(.minutes(5)), .stopsWhatItStarts)
struct MultiNodeTests {
    @Test("pushes taken by three nodes at once reach the channel in commit order; acks on another node")
    func orderAcrossNodes() async throws {
        let nodes = try await GatewayNodes.start(count: 3, limits: ["window": 1000])
        let device = try await nodes.enroll(on: 0)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let channel = try await openChannel(device)
        let providers = try await nodes.providers()
        // Three providers, one per node, each sending its own series; each push waits for its 200, so a series
        // commits in its own order, and the three interleave as the nodes' transactions do.
        let perNode = 100
        let statuses = await withTaskGroup(of: [Int].self) { group in
            for (index, provider) in providers.enumerated() {
                group.addTask {
                    var statuses: [Int] = []
                    for k in 0..<perNode {
                        let n = index * 1000 + k
                        statuses.append(await provider.push(token: token, payload: #"{"n":\#(n)}"#).status)
                    }
                    return statuses
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(statuses.count == 3 * perNode && statuses.allSatisfy { $0 == 200 }, "\(Set(statuses))")
        var received: [Int] = []
        var ids: [String] = []
        for _ in 0..<(3 * perNode) {
            let push = try await channel.nextPush()
            received.append(Harness.number(push) ?? -1)
            ids.append(push.id)
        }
        for index in 0..<3 {
            let series = received.filter { $0 / 1000 == index }
            #expect(series == Array(index * 1000..<index * 1000 + perNode), "node \(index)'s series out of order")
        }
        // The order on the channel is the order PostgreSQL committed them in (the device's sequence numbers).
        let committed = try await nodes.cluster.psql(
            "SELECT string_agg(convert_from(payload, 'UTF8'), ' ' ORDER BY device_seq) FROM pushes")
        #expect(received == numbers(committed), "channel order differs from commit order")
        // The device acknowledges through another node: every push is gone from the store.
        let elsewhere = DeviceClient(curl: nodes.curl, port: nodes[1].devicePort, credential: device.credential)
        let acked = try await elsewhere.ack(ids)
        #expect(acked.acked == 3 * perNode, "\(acked)")
        #expect(try await nodes.cluster.psql("SELECT count(*) FROM pushes").trimmed == "0")
        try await channel.expectNoPush(within: .milliseconds(300))
        for provider in providers { provider.close() }
        try await nodes.stop()
    }

    @Test("collapse and expiry across nodes; a newer channel on another node replaces the older; expiration 0")
    func channelMovesAcrossNodes() async throws {
        let nodes = try await GatewayNodes.start(count: 3)
        let device = try await nodes.enroll(on: 0)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let providers = try await nodes.providers()
        // Offline: one collapse id through three nodes keeps the last; a push expiring in 2 s is not delivered
        // once its time passed.
        let now = Gateway.systemMilliseconds() / 1000
        for (index, provider) in providers.enumerated() {
            let answer = await provider.push(token: token, collapseID: "c", payload: #"{"n":\#(10 + index)}"#)
            #expect(answer.status == 200)
        }
        #expect(await providers[1].push(token: token, expiration: now + 2, payload: #"{"n":20}"#).status == 200)
        #expect(await providers[0].push(token: token, payload: #"{"n":30}"#).status == 200)
        // Waiting for the wall clock is the point here (the processes have no manual clock): until just past 2 s.
        try await Task.sleep(for: .milliseconds((now + 2) * 1000 - Gateway.systemMilliseconds() + 50))
        let first = try await openChannel(device)
        #expect(try Harness.number(await first.nextPush()) == 12)
        #expect(try Harness.number(await first.nextPush()) == 30)

        // The device opens a channel on node 1: node 0 closes the older one when node 1's claim commits.
        let second = try await openChannel(nodes.device(device, on: 1))
        #expect(try await first.next() == .record(.replaced))
        #expect(try await first.next() == .end(error: nil))
        let listed = try await nodes.listNodes()
        #expect(listed == ["n0": 0, "n1": 1, "n2": 0], "\(listed)")
        // Delivered on node 0, not acknowledged: delivered again on node 1, in order.
        #expect(try Harness.number(await second.nextPush()) == 12)
        #expect(try Harness.number(await second.nextPush()) == 30)
        // apns-expiration 0 taken by node 2: sent at once on node 1's channel.
        #expect(await providers[2].push(token: token, expiration: 0, payload: #"{"n":1}"#).status == 200)
        #expect(try Harness.number(await second.nextPush()) == 1)
        // An expiration already past (1970; the current second, as aioapns sends for time_to_live=0) taken by
        // nodes 0 and 2: sent at once on node 1's channel too (before: 200 and dropped untried).
        #expect(await providers[0].push(token: token, expiration: 1, payload: #"{"n":2}"#).status == 200)
        #expect(try Harness.number(await second.nextPush()) == 2)
        let thisSecond = Gateway.systemMilliseconds() / 1000
        #expect(await providers[2].push(token: token, expiration: thisSecond, payload: #"{"n":3}"#).status == 200)
        #expect(try Harness.number(await second.nextPush()) == 3)
        try await second.expectNoPush(within: .milliseconds(300))
        for provider in providers { provider.close() }
        try await nodes.stop()
    }

    @Test("the node holding the channel SIGKILLed mid-burst: the device moves, 0 lost, 0 delivered again after ack")
    func nodeKilledMidBurst() async throws {
        let nodes = try await GatewayNodes.start(count: 3, limits: ["sweepIntervalSeconds": 1])
        let device = try await nodes.enroll(on: 0)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        var channel = try await openChannel(device)
        let providers = try await nodes.providers()
        let total = 200
        // Nodes 1 and 2 take the burst; node 0 holds the channel and is killed after 60 deliveries.
        let burst = Task {
            await withTaskGroup(of: [Int].self) { group in
                for index in 1...2 {
                    group.addTask {
                        var accepted: [Int] = []
                        for n in stride(from: index, through: total, by: 2) {
                            let answer = await providers[index].push(token: token, payload: #"{"n":\#(n)}"#)
                            if answer.status == 200 { accepted.append(n) }
                        }
                        return accepted
                    }
                }
                return await group.reduce(into: []) { $0 += $1 }
            }
        }
        var acked: Set<String> = []
        var again: [String] = []
        var received: Set<Int> = []
        var pendingAck: [String] = []
        var client = device
        var killedAt: ContinuousClock.Instant?
        var failover: Duration?
        while received.count < total {
            let push: ChannelRecord.Push
            do {
                push = try await channel.nextPush(timeout: .seconds(15))
            } catch {
                // The channel ended with its node: the device reconnects to the next node.
                #expect(killedAt != nil, "channel lost before the kill: \(error)")
                client = nodes.device(device, on: 1)
                channel = try await openChannel(client)
                pendingAck = []
                continue
            }
            let id = push.id
            if acked.contains(id) { again.append(id) }
            if let killedAt, failover == nil { failover = ContinuousClock.now - killedAt }
            received.insert(Harness.number(push) ?? -1)
            pendingAck.append(id)
            if pendingAck.count == 10 {
                if (try? await client.ack(pendingAck)) != nil {
                    acked.formUnion(pendingAck)
                }
                pendingAck = []
            }
            if received.count == 60, killedAt == nil {
                nodes[0].kill()
                killedAt = .now
            }
        }
        let accepted = await burst.value
        #expect(accepted.count == total, "node 0's death made nodes 1 and 2 refuse pushes")
        #expect(received == Set(1...total), "lost: \(Set(accepted).subtracting(received).sorted())")
        #expect(again.isEmpty, "delivered again after their ack: \(again)")
        #expect(failover != nil)
        // Node 0 stopped renewing its lease: listed dead within three sweeps.
        try await nodes.waitForLive(["n1", "n2"])
        for provider in providers { provider.close() }
        try await nodes.stop()
    }

    @Test("PostgreSQL restarted mid-burst: every push answered 200 is delivered across nodes, in order")
    func postgresRestartMidBurst() async throws {
        let nodes = try await GatewayNodes.start(count: 2)
        let device = try await nodes.enroll(on: 0)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let channel = try await openChannel(device)
        let provider = try await Provider.connect(port: nodes[1].providerPort)
        var accepted: [Int] = []
        var refused = 0
        for n in 1...60 {
            if n == 20 {
                await nodes.cluster.stop(mode: "fast")
                let answer = await provider.push(token: token, payload: #"{"n":\#(n)}"#)
                #expect(answer.status == 503 && answer.reason == "ServiceUnavailable", "\(answer)")
                refused += 1
                try await nodes.cluster.startServer()
            }
            // A refused push is retried until the store is back (503 means not stored).
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                let answer = await provider.push(token: token, payload: #"{"n":\#(n)}"#)
                if answer.status == 200 {
                    accepted.append(n)
                    break
                }
                #expect(answer.status == 503 && answer.reason == "ServiceUnavailable", "\(answer)")
                refused += 1
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        #expect(accepted == Array(1...60))
        #expect(refused > 0, "the outage was not seen")
        var received: [Int] = []
        while received.count < 60 {
            let n = try Harness.number(await channel.nextPush(timeout: .seconds(20))) ?? -1
            if received.last != n { received.append(n) }
        }
        #expect(received == Array(1...60))
        provider.close()
        try await nodes.stop()
    }

    @Test("a device revoked by the CLI: its channel on another node closes at once, pushes 410 on every node")
    func revokedEverywhere() async throws {
        // The sweep, which would find the revocation too, is an hour away: the record can only come from the message
        // the CLI's transaction sent to the channel's node, which is what "at once" means (no time bound, which the
        // CLI's start and its database connection on a loaded machine would make a coin toss).
        let nodes = try await GatewayNodes.start(count: 3, limits: ["sweepIntervalSeconds": 3600])
        let device = try await nodes.enroll(on: 0)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let channel = try await openChannel(nodes.device(device, on: 2))
        let deviceID = try #require(device.deviceID)
        let output = try await ChildProcess.run(
            try GatewayProcess.executable("rouse"),
            ["gateway", "devices", "revoke", deviceID, "--database", nodes.cluster.url()])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(try await channel.next(timeout: .seconds(60)) == .record(.revoked))
        let providers = try await nodes.providers()
        for provider in providers {
            let answer = await provider.push(token: token)
            #expect(answer.status == 410 && answer.reason == "Unregistered", "\(answer)")
        }
        let refused = try await nodes.device(device, on: 1).call("GET", "/device/v1/tokens")
        #expect(refused.status == 403, "\(refused)")
        for provider in providers { provider.close() }
        try await nodes.stop()
    }

    @Test("news lost with the listening connection are made up for: every channel looks at the store once")
    func lostNewsRefill() async throws {
        let cluster = try await PostgresCluster.start()
        let h = try await Harness.start { $0.postgres = StoreBackend.settings(of: cluster) }
        let channel = try await h.channel()
        // A push committed as another node would, whose message never arrives (no NOTIFY).
        try await cluster.psql(
            """
            WITH s AS (UPDATE devices SET next_seq = next_seq + 1
                       WHERE id = (SELECT device_id FROM tokens WHERE token = '\(h.token)') RETURNING id, next_seq)
            INSERT INTO pushes(device_id, token, topic, push_type, priority, apns_id, expires_at, received_at,
                               is_voip, payload, device_seq)
            SELECT s.id, '\(h.token)', 'com.example.rouse', 'alert', 10, '0d1e2f30-0000-4000-8000-000000000017',
                   9999999999999, 0, false, convert_to('{"n":7}', 'UTF8'), s.next_seq FROM s
            """)
        try await channel.expectNoPush(within: .milliseconds(300))
        // The node's listening connection breaks: once it listens again, its channels load what they missed.
        let terminated = try await cluster.psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'")
        #expect(terminated.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(try await h.numbers(channel, count: 1) == [7])
        await h.stop()
    }

    // MARK: Helpers

    private func openChannel(_ device: DeviceClient) async throws -> Channel {
        let channel = try await device.channel()
        let hello = try await channel.next()
        guard hello.type == "hello" else { throw FixtureError("expected hello, got \(hello)") }
        return channel
    }

    private func numbers(_ text: String) -> [Int] {
        text.split(separator: " ").compactMap { field in
            Int(field.drop { !$0.isNumber && $0 != "-" }.prefix { $0.isNumber || $0 == "-" })
        }
    }
}

/// `count` gateway processes (nodes `n0`, `n1`, …) on one fresh PostgreSQL cluster.
struct GatewayNodes: Sendable {
    let cluster: PostgresCluster
    let store: PostgresGatewayStore
    let curl: CurlHTTPClient
    private let directories: [TemporaryDirectory]
    private let processes: [GatewayProcess]

    subscript(index: Int) -> GatewayProcess { processes[index] }

    static func start(count: Int, limits: [String: Int] = [:]) async throws -> GatewayNodes {
        let cluster = try await PostgresCluster.start()
        let store = try PostgresGatewayStore(settings: StoreBackend.settings(of: cluster))
        var directories: [TemporaryDirectory] = []
        var processes: [GatewayProcess] = []
        for index in 0..<count {
            let directory = try TemporaryDirectory()
            directories.append(directory)
            processes.append(
                try await GatewayProcess.start(
                    directory: directory, database: cluster.url(), limits: limits, node: "n\(index)"))
        }
        return GatewayNodes(
            cluster: cluster, store: store, curl: try CurlHTTPClient(), directories: directories,
            processes: processes)
    }

    /// Enrolls a new device through node `index`.
    func enroll(on index: Int) async throws -> DeviceClient {
        let secret = try Gateway.makeEnrollmentSecret(
            store: store, now: Gateway.systemMilliseconds(), validity: .seconds(600))
        return try await DeviceClient.enroll(curl: curl, port: self[index].devicePort, secret: secret)
    }

    /// The same device talking to node `index`.
    func device(_ device: DeviceClient, on index: Int) -> DeviceClient {
        DeviceClient(curl: curl, port: self[index].devicePort, credential: device.credential)
    }

    /// One provider connection per live node.
    func providers() async throws -> [Provider] {
        var providers: [Provider] = []
        for process in processes {
            providers.append(try await Provider.connect(port: process.providerPort))
        }
        return providers
    }

    /// `rouse gateway nodes --json`: live node → channels.
    func listNodes() async throws -> [String: Int] {
        let output = try await ChildProcess.run(
            try GatewayProcess.executable("rouse"), ["gateway", "nodes", "--json", "--database", cluster.url()])
        guard output.status == 0,
            let list = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [[String: Any]]
        else { throw FixtureError("rouse gateway nodes: \(output.status) \(output.stdout) \(output.stderr)") }
        var result: [String: Int] = [:]
        for node in list where node["live"] as? Bool == true {
            result[node["node"] as? String ?? ""] = node["channels"] as? Int
        }
        return result
    }

    /// Waits (at most 10 s) until exactly these nodes are live.
    func waitForLive(_ expected: Set<String>) async throws {
        var listed: Set<String> = []
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            listed = Set(try await listNodes().keys)
            if listed == expected { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        Issue.record("live nodes \(listed), expected \(expected)")
    }

    /// SIGTERM to every node still running; each must exit 0.
    func stop() async throws {
        for process in processes where process.process.isRunning {
            let pid = process.pid
            let status = try await offPool { process.terminate() }
            #expect(status == 0, "node \(pid) exit: \(process.stderr.suffix(2000))")
        }
        await curl.shutdown()
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}

extension DeviceClient {
    /// The device id of a bearer credential (`<id>.<secret>`).
    var deviceID: String? {
        guard case .bearer(let value) = credential else { return nil }
        return value.split(separator: ".").first.map(String.init)
    }
}
