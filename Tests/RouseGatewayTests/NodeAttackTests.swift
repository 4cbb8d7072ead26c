import Foundation
import RouseGateway
import RouseTestSupport
import RouseWire
import Testing

/// Another PostgreSQL role against the nodes' messages, and a second node started with a live node's id, against
/// real `rouse-gateway` processes on a throwaway cluster.
@Suite(
    "Gateway nodes under attack: forged and overheard node messages, duplicate node ids", .timeLimit(.minutes(5)),
    .stopsWhatItStarts)
struct NodeAttackTests {
    @Test("NOTIFY of forged messages (a p with sequence Int64.max, a revocation): refused and counted, node unharmed")
    func forgedMessages() async throws {
        let nodes = try await GatewayNodes.start(count: 2)
        let device = try await nodes.enroll(on: 0)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let deviceID = try #require(device.deviceID)
        let channel = try await device.channel()
        #expect(try await channel.next().type == "hello")
        // Any role that may connect may NOTIFY on a node's channel. Before: the `p` was taken, and the next push to
        // the device trapped node 0 (`lastSeq + 1`); the `r` closed the device's channel.
        try await nodes.cluster.psql("SELECT pg_notify('rouse_node_n0', E'p\\t9223372036854775807\\t\(deviceID)')")
        try await nodes.cluster.psql("SELECT pg_notify('rouse_node_n0', E'r\\t\(deviceID)')")
        let forged = limitHits("nodes", "forged-message")
        let deadline = ContinuousClock.now + .seconds(10)
        while try await adminMetric(port: nodes[0].adminPort, forged) < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await adminMetric(port: nodes[0].adminPort, forged) == 2)
        // Pushes through both nodes still reach the channel on node 0, which is alive.
        let providers = try await nodes.providers()
        #expect(await providers[0].push(token: token, payload: #"{"n":1}"#).status == 200)
        #expect(await providers[1].push(token: token, payload: #"{"n":2}"#).status == 200)
        #expect(try Harness.number(await channel.nextPush()) == 1)
        #expect(try Harness.number(await channel.nextPush()) == 2)
        #expect(nodes[0].process.isRunning)
        for provider in providers { provider.close() }
        channel.close()
        try await nodes.stop()
    }

    @Test("a role that LISTENs on a node's channel sees no device id, only sealed payloads")
    func overheardMessages() async throws {
        let nodes = try await GatewayNodes.start(count: 2)
        let device = try await nodes.enroll(on: 0)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let deviceID = try #require(device.deviceID)
        let channel = try await device.channel()
        #expect(try await channel.next().type == "hello")
        let cluster = nodes.cluster
        let overheard = Task {
            try await cluster.psqlSession(["LISTEN rouse_node_n0", "SELECT pg_sleep(4)", "SELECT 1"])
        }
        // The listener is in place once its pg_sleep runs (LISTEN committed before).
        let deadline = ContinuousClock.now + .seconds(10)
        while try await cluster.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(4)'"
        ).trimmingCharacters(in: .whitespacesAndNewlines) != "1", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let provider = try await Provider.connect(port: nodes[1].providerPort)
        #expect(await provider.push(token: token, payload: #"{"n":1}"#).status == 200)
        #expect(try Harness.number(await channel.nextPush()) == 1)
        let text = try await overheard.value
        #expect(text.contains("Asynchronous notification") && text.contains("s1:"), "\(text)")
        #expect(!text.contains(deviceID), "\(text)")
        provider.close()
        channel.close()
        try await nodes.stop()
    }

    @Test("a second live node with the same id is refused at start; the node restarted after SIGKILL starts")
    func duplicateNodeID() async throws {
        let nodes = try await GatewayNodes.start(count: 1)
        let directory = try TemporaryDirectory()
        var refusal = ""
        do {
            let twin = try await GatewayProcess.start(
                directory: directory, database: nodes.cluster.url(), node: "n0", timeout: .seconds(20))
            twin.kill()
        } catch {
            refusal = "\(error)"
        }
        // Before: it started, and cleared the channels of the live n0.
        #expect(refusal.contains(#"node id "n0" is in use by another live gateway node"#), "\(refusal)")
        #expect(nodes[0].process.isRunning)
        // The same node, killed and started again at once: its lock went with its connection.
        nodes[0].kill()
        let restarted = try await GatewayProcess.start(
            directory: directory, database: nodes.cluster.url(), node: "n0", timeout: .seconds(20))
        defer { restarted.kill() }
        #expect(restarted.process.isRunning)
        #expect(restarted.terminate() == 0, "stderr: \(restarted.stderr)")
        try await nodes.stop()
    }

    @Test("another role holding the old advisory locks (node id, migration), or what locks it can get: node restarts")
    func lockSquatter() async throws {
        let nodes = try await GatewayNodes.start(count: 1)
        let cluster = nodes.cluster
        try await cluster.psql("CREATE ROLE mallory")
        let table = try await cluster.psql(
            "SELECT relname FROM pg_class WHERE relname LIKE 'gateway_node_lock_%'"
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(table.hasPrefix("gateway_node_lock_"), "\(table)")
        // The id's lock is out of another role's reach.
        var refusal = ""
        do {
            try await cluster.psqlSession([
                "SET ROLE mallory", "BEGIN; LOCK TABLE \(table) IN SHARE UPDATE EXCLUSIVE MODE NOWAIT",
            ])
        } catch {
            refusal = "\(error)"
        }
        #expect(refusal.contains("permission denied"), "\(refusal)")
        nodes[0].kill()
        // Any role may take an advisory lock; a PREPARE locks the table before its privilege check. Before: the
        // advisory lock on the id made the node refuse to start ("in use"), forever; the one on migrations made
        // every node wait at start.
        let squatter = Task {
            try await cluster.psqlSession([
                "SET ROLE mallory",
                "SELECT pg_advisory_lock(1380930899, hashtext('n0')), pg_advisory_lock(7239016430921)",
                "BEGIN; PREPARE v AS DELETE FROM schema_version; SELECT pg_sleep(60)",
            ])
        }
        defer { squatter.cancel() }
        let tableSquatter = Task {
            try await cluster.psqlSession([
                "SET ROLE mallory", "BEGIN; PREPARE d AS DELETE FROM \(table); SELECT pg_sleep(61)",
            ])
        }
        defer { tableSquatter.cancel() }
        let deadline = ContinuousClock.now + .seconds(10)
        while try await cluster.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(6_)' AND state = 'active'"
        ).trimmingCharacters(in: .whitespacesAndNewlines) != "2", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let held = try await cluster.psql(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_stat_activity a"
                + " ON a.pid = l.pid WHERE c.relname IN ('\(table)', 'schema_version')"
                + " AND a.query LIKE '%pg_sleep(6_)'")
        #expect(held.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "the squatter holds both: \(held)")
        let directory = try TemporaryDirectory()
        let restarted = try await GatewayProcess.start(
            directory: directory, database: cluster.url(), node: "n0", timeout: .seconds(20))
        defer { restarted.kill() }
        #expect(restarted.process.isRunning)
        // A twin is still refused.
        var twinRefusal = ""
        do {
            let twin = try await GatewayProcess.start(
                directory: try TemporaryDirectory(), database: cluster.url(), node: "n0", timeout: .seconds(20))
            twin.kill()
        } catch {
            twinRefusal = "\(error)"
        }
        #expect(twinRefusal.contains(#"node id "n0" is in use by another live gateway node"#), "\(twinRefusal)")
        try await cluster.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(6_)'"
                + " AND pid <> pg_backend_pid()")
        _ = try? await squatter.value
        _ = try? await tableSquatter.value
        #expect(restarted.terminate() == 0, "stderr: \(restarted.stderr)")
        try await nodes.stop()
    }

    @Test("a node message captured by a role that LISTENs and replayed after the node restarted: refused")
    func replayAfterRestart() async throws {
        let nodes = try await GatewayNodes.start(count: 2)
        let device = try await nodes.enroll(on: 0)
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let channel = try await device.channel()
        #expect(try await channel.next().type == "hello")
        let cluster = nodes.cluster
        let overheard = Task {
            try await cluster.psqlSession(["LISTEN rouse_node_n0", "SELECT pg_sleep(4)", "SELECT 1"])
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while try await cluster.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(4)'"
        ).trimmingCharacters(in: .whitespacesAndNewlines) != "1", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let provider = try await Provider.connect(port: nodes[1].providerPort)
        #expect(await provider.push(token: token, payload: #"{"n":1}"#).status == 200)
        #expect(try Harness.number(await channel.nextPush()) == 1)
        provider.close()
        channel.close()
        let text = try await overheard.value
        let captured = text.split(separator: "\"").map(String.init).filter { $0.hasPrefix("s1:") }
        #expect(!captured.isEmpty, "\(text)")
        // Node 0 restarts (its seen counters went with it); the captures are played back well within 60 s.
        nodes[0].kill()
        let restarted = try await GatewayProcess.start(
            directory: try TemporaryDirectory(), database: cluster.url(), node: "n0", timeout: .seconds(20))
        defer { restarted.kill() }
        for payload in captured { try await cluster.psql("SELECT pg_notify('rouse_node_n0', '\(payload)')") }
        let forged = limitHits("nodes", "forged-message")
        let refusedBy = ContinuousClock.now + .seconds(10)
        while try await adminMetric(port: restarted.adminPort, forged) < captured.count,
            ContinuousClock.now < refusedBy
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        // Before: opened and taken (a `replaced` or `revoked` could end a channel of the new run).
        #expect(try await adminMetric(port: restarted.adminPort, forged) == captured.count)
        #expect(restarted.terminate() == 0, "stderr: \(restarted.stderr)")
        try await nodes.stop()
    }

    @Test("a password in the database URL (a password= parameter) is in no log line or error of the gateway")
    func passwordNotLogged() async throws {
        let nodes = try await GatewayNodes.start(count: 1)
        let directory = try TemporaryDirectory()
        let url =
            "postgresql://\(nodes.cluster.user)@127.0.0.1:\(nodes.cluster.port)/missing"
            + "?password=\(nodes.cluster.password)"
        var failure = ""
        do {
            let gateway = try await GatewayProcess.start(
                directory: directory, database: url, node: "n9", timeout: .seconds(20))
            gateway.kill()
        } catch {
            failure = "\(error)"
        }
        // The database does not exist: the start fails naming it, and, before, the URL with its password.
        #expect(failure.contains("missing"), "\(failure)")
        #expect(!failure.contains(nodes.cluster.password), "\(failure)")
        try await nodes.stop()
    }
}
