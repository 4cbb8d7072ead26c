import Foundation
import RouseAgentCore
import RouseChildProcess
import RouseEventLoop
import RouseHTTP2

/// One network namespace per gateway node, joined to ours by a veth pair on a /30 of its own: the node listens on
/// the inside address, PostgreSQL on the outside ones; setting the outside end down drops the node's whole link.
/// Names carry the test run's name (deploy/check-leftovers.sh looks for them) or our pid.
struct ChaosNetwork: Sendable {
    struct Link: Sendable {
        let namespace: String
        let outside: String
        let outsideAddress: String
        let insideAddress: String
    }

    let links: [Link]
    /// The /16 the links are cut from (PostgreSQL trusts it).
    let subnet: String

    var outsideAddresses: [String] { links.map(\.outsideAddress) }
    var insideAddresses: [String] { links.map(\.insideAddress) }

    init(nodes: Int) throws {
        let run = ProcessInfo.processInfo.environment["ROUSE_TEST_RUN"] ?? "pid\(getpid())"
        let tag = getpid() % 100_000
        let octet = 200 + Int(tag % 50)
        subnet = "10.\(octet).0.0/16"
        var links: [Link] = []
        for node in 0..<nodes {
            links.append(
                Link(
                    namespace: "rouse-chaos-\(run)-\(node)", outside: "rc\(tag)o\(node)",
                    outsideAddress: "10.\(octet).\(node).1", insideAddress: "10.\(octet).\(node).2"))
        }
        self.links = links
        do {
            for link in links {
                try AgentNetworkBench.ip(["netns", "add", link.namespace])
                try AgentNetworkBench.ip([
                    "link", "add", link.outside, "type", "veth", "peer", "name", "eth0", "netns", link.namespace,
                ])
                try AgentNetworkBench.ip(["addr", "add", link.outsideAddress + "/30", "dev", link.outside])
                try AgentNetworkBench.ip(["link", "set", link.outside, "up"])
                try Self.inside(link, ["addr", "add", link.insideAddress + "/30", "dev", "eth0"])
                try Self.inside(link, ["link", "set", "eth0", "up"])
                try Self.inside(link, ["link", "set", "lo", "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    static func inside(_ link: Link, _ arguments: [String]) throws {
        try AgentNetworkBench.ip(["-n", link.namespace] + arguments)
    }

    /// Deletes the namespaces (their veth ends go with them, and the outside ends with those).
    func remove() {
        for link in links { _ = try? ChildProcess.runSync("/usr/sbin/ip", ["netns", "del", link.namespace]) }
    }
}

/// The gateway nodes: their processes (restarted by the faults), which of them the benchmark knows to be down
/// (killed or stopped; a dropped link it does not tell anyone, as a real network does not), and one provider
/// connection per node, opened on first use and dropped when it fails.
actor ChaosCluster {
    struct Node {
        let configuration: String
        let link: ChaosNetwork.Link
        var process: RunningChild?
        var client: HTTP2Client?
    }

    static let providerPort: UInt16 = 8443
    static let devicePort: UInt16 = 8444

    private var nodes: [Node]
    private let executable: String
    private let directory: String
    private let loop: EventLoop
    /// Processes by node, readable without the actor (the synchronous stop at exit).
    private let processes: ProcessTable

    private init(nodes: [Node], executable: String, directory: String, loop: EventLoop) {
        self.nodes = nodes
        self.executable = executable
        self.directory = directory
        self.loop = loop
        self.processes = ProcessTable(count: nodes.count)
    }

    /// Writes each node's configuration (heartbeats every 2 s so a stalled channel is noticed) and starts them.
    static func start(
        executable: String, network: ChaosNetwork, databasePort: Int, directory: String, certs: String,
        certificate: String
    ) async throws -> ChaosCluster {
        var nodes: [Node] = []
        for (index, link) in network.links.enumerated() {
            let config = """
                {"provider": {"listen": "\(link.insideAddress):\(providerPort)", "certificate": "\(certificate)", "privateKey": "\(certs)/server.key"},
                 "device": {"listen": "\(link.insideAddress):\(devicePort)", "certificate": "\(certificate)", "privateKey": "\(certs)/server.key"},
                 "database": "postgresql://rouse@\(link.outsideAddress):\(databasePort)/chaos",
                 "node": "n\(index)",
                 "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "\(certs)/apns-key.pub.pem",
                           "topics": ["*"]}],
                 "limits": {"heartbeatSeconds": 2}}
                """
            let path = directory + "/node\(index).json"
            try Data(config.utf8).write(to: URL(fileURLWithPath: path))
            nodes.append(Node(configuration: path, link: link))
        }
        let loop = try EventLoop(name: "chaos-providers")
        loop.start()
        let cluster = ChaosCluster(nodes: nodes, executable: executable, directory: directory, loop: loop)
        for index in nodes.indices { try await cluster.startNode(index) }
        return cluster
    }

    var count: Int { nodes.count }

    func address(_ node: Int) -> String { nodes[node].link.insideAddress }

    func isRunning(_ node: Int) -> Bool { nodes[node].process?.isRunning ?? false }

    /// The nodes the benchmark knows to be running.
    func running() -> [Int] { nodes.indices.filter { isRunning($0) } }

    /// Starts a node in its namespace and waits for its ready line; a start that fails (the database restarting
    /// at the same moment) is tried again, up to 30 s.
    func startNode(_ index: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        var attempt = 0
        while true {
            attempt += 1
            let process = try ChildProcess.start(
                "/usr/sbin/ip",
                [
                    "netns", "exec", nodes[index].link.namespace, executable, "--config", nodes[index].configuration,
                    "--log-level", "warning",
                ], stdout: .lines, stderr: .file(directory + "/node\(index)-\(attempt).log"))
            let ready = await process.lines.first(timeout: .seconds(20)) { $0.contains("device=") }
            if ready != nil {
                nodes[index].process = process
                processes.set(index, process)
                return
            }
            process.kill()
            guard ContinuousClock.now < deadline else {
                throw Bench.Failure(
                    description: "chaos: node \(index) did not start (see \(directory)/node\(index)-\(attempt).log)")
            }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    /// SIGKILL (`graceful`: SIGTERM, then wait) of a running node.
    func stopNode(_ index: Int, graceful: Bool) async {
        guard let process = nodes[index].process else { return }
        nodes[index].process = nil
        dropClient(index, nil)
        if graceful {
            process.terminate()
            if (try? await process.wait(timeout: .seconds(20))) == nil { process.kill() }
        } else {
            process.kill()
        }
        processes.set(index, nil)
    }

    /// The provider connection to `node`, connecting if there is none.
    func client(_ node: Int) async -> HTTP2Client? {
        if let client = nodes[node].client { return client }
        var tls = TLSConfiguration()
        tls.verifyPeer = false
        var configuration = HTTP2ClientConfiguration(
            host: nodes[node].link.insideAddress, port: Self.providerPort, tls: tls)
        configuration.connectTimeout = .seconds(2)
        guard let client = try? await HTTP2Client.connect(configuration, on: loop) else { return nil }
        if let existing = nodes[node].client {  // another push connected meanwhile
            client.close()
            return existing
        }
        nodes[node].client = client
        return client
    }

    /// Forgets (and closes) `node`'s provider connection if it is still `client` (nil: whichever it is).
    func dropClient(_ node: Int, _ client: HTTP2Client?) {
        guard let current = nodes[node].client, client == nil || current === client else { return }
        nodes[node].client = nil
        current.close()
    }

    /// Every node running again (the faults end with their own repair; this is the guard).
    func healAll() async {
        for index in nodes.indices where !isRunning(index) { try? await startNode(index) }
    }

    /// Kills every node (synchronously: called from a `defer`).
    nonisolated func stopAll() {
        for process in processes.all() { process.kill() }
        loop.stopAndWait()
    }
}

/// The node processes behind a lock, for the synchronous stop at exit.
final class ProcessTable: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var processes: [RunningChild?]

    init(count: Int) { processes = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ process: RunningChild?) { lock.withLock { processes[index] = process } }

    func all() -> [RunningChild] { lock.withLock { processes.compactMap { $0 } } }
}

/// One fault at a time, each repaired before the next: what a cluster meets in a bad week, in minutes.
struct ChaosFaults {
    enum Kind: String, CaseIterable {
        case nodeKilled = "node-killed"
        case nodeStopped = "node-stopped"
        case postgresCrashed = "postgres-crashed"
        case postgresRestarted = "postgres-restarted"
        case linkDropped = "link-dropped"
        case agentKilled = "agent-killed"
    }

    let cluster: ChaosCluster
    let postgres: BenchPostgres
    let agents: ChaosAgents
    let interval: Int
    var random: SplitMix64

    init(cluster: ChaosCluster, postgres: BenchPostgres, agents: ChaosAgents, interval: Int, seed: UInt64) {
        self.cluster = cluster
        self.agents = agents
        self.postgres = postgres
        self.interval = interval
        self.random = SplitMix64(seed: seed)
    }

    mutating func run(
        until end: ContinuousClock.Instant, progress: ChaosBench.Progress, ledger: ChaosLedger
    ) async -> [String: Int] {
        var counts: [String: Int] = [:]
        var lastReport = ContinuousClock.now
        while true {
            let pause = Double(interval) * Double.random(in: 0.5...1.5, using: &random)
            let next = ContinuousClock.now + .milliseconds(Int(pause * 1000))
            guard next < end else { break }
            try? await Task.sleep(until: next)
            let kind = Kind.allCases.randomElement(using: &random) ?? .nodeKilled
            let node = Int.random(in: 0..<(await cluster.count), using: &random)
            let outage = Duration.milliseconds(Int.random(in: 1000...6000, using: &random))
            switch kind {
            case .nodeKilled, .nodeStopped:
                await cluster.stopNode(node, graceful: kind == .nodeStopped)
                try? await Task.sleep(for: outage)
                do { try await cluster.startNode(node) } catch { progress.say("\(error)") }
            case .postgresCrashed, .postgresRestarted:
                postgres.restart(immediate: kind == .postgresCrashed)
            case .agentKilled:
                let agent = Int.random(in: 0..<(await agents.count), using: &random)
                await agents.killAgent(agent)
                try? await Task.sleep(for: outage)
                do { try await agents.startAgent(agent) } catch { progress.say("\(error)") }
            case .linkDropped:
                let network = await cluster.link(node)
                network.setDown()
                try? await Task.sleep(for: outage)
                network.setUp()
            }
            counts[kind.rawValue, default: 0] += 1
            if ContinuousClock.now - lastReport >= .seconds(60) {
                lastReport = .now
                await ledger.absorb(handed: await agents.handed())
                let state = await ledger.progress()
                progress.say(
                    "\(counts.values.reduce(0, +)) faults; \(state.accepted) pushes answered 200, \(state.received) received"
                )
            }
        }
        return counts
    }
}

extension ChaosCluster {
    /// The veth of `node`, to drop and restore.
    struct LinkSwitch: Sendable {
        let outside: String

        func setDown() { try? AgentNetworkBench.ip(["link", "set", outside, "down"]) }
        func setUp() { try? AgentNetworkBench.ip(["link", "set", outside, "up"]) }
    }

    func link(_ node: Int) -> LinkSwitch { LinkSwitch(outside: nodes[node].link.outside) }
}
