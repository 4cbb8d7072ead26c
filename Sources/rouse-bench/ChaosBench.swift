import Foundation
import RouseAPNs
import RouseAgentCore
import RouseChildProcess
import RouseGateway

/// `rouse-bench chaos`: a soak of the gateway cluster under faults (root). Three `rouse-gateway` nodes, each in a
/// network namespace of its own behind a veth pair, share one PostgreSQL server (a cluster the benchmark creates,
/// Debian's durability defaults); devices hold channels over libcurl and reconnect elsewhere when theirs ends or
/// stalls; real `rouse-agent` processes, each given every node, run a handler each (the example handler, reporting a
/// call for each VoIP push and logging it); a provider pushes at a steady rate through any node. Meanwhile, one
/// fault at a time: a node killed (SIGKILL) or stopped (SIGTERM) and started again, an agent killed (SIGKILL; its
/// handler stays and is re-attached) and started again, PostgreSQL crashed (`pg_ctl restart -m immediate`) or
/// restarted, a node's link dropped (its veth down: its channels, its provider connections and its database
/// connection stall at once) and restored.
///
/// At the end every fault is healed and the benchmark waits for the devices to drain, then counts:
/// - **lost**: pushes answered 200 that no device received;
/// - **twice**: pushes received under two delivery ids (stored twice), or received again after the device's
///   acknowledgement of them was answered 200, or logged twice by a handler (handed twice by an agent);
/// - pushes refused or left unanswered (an unknown outcome: a link that dropped mid-request), which a provider
///   would retry and the gateway may or may not have kept, and the ones of them that arrived anyway;
/// - provider → device latency p50/p99/max over every push received (the max is the longest outage a push saw).
///
/// Exits 1 when anything was lost or delivered (or handed) twice, or a push the gateway refused (or never read) arrived.
enum ChaosBench {
    struct Options {
        var nodes = 3
        var devices = 6
        var agents = 3
        var seconds = 1800
        /// Pushes per second, all devices together.
        var rate = 20
        /// Mean seconds between the end of one fault and the start of the next.
        var interval = 15
        var seed: UInt64?
        var json = false
        var gateway: String?
    }

    static let usage = """
        usage: rouse-bench chaos [--seconds N] [--nodes N] [--devices N] [--agents N] [--rate PUSHES_PER_SECOND]
                                 [--interval SECONDS] [--seed N] [--gateway PATH] [--json]
          (root: network namespaces, veth pairs and a PostgreSQL server of its own; defaults: 1800 s, 3 nodes,
           6 devices, 3 agents, 20 pushes/s, a fault every 15 s on average)
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--seconds":
                options.seconds = try Bench.value(after: argument, from: &iterator, "seconds ≥ 10") { $0 >= 10 }
            case "--nodes":
                options.nodes = try Bench.value(after: argument, from: &iterator, "2 to 9 nodes") {
                    (2...9).contains($0)
                }
            case "--devices":
                options.devices = try Bench.value(after: argument, from: &iterator, "1 to 200 devices") {
                    (1...200).contains($0)
                }
            case "--agents":
                options.agents = try Bench.value(after: argument, from: &iterator, "1 to 20 agents") {
                    (1...20).contains($0)
                }
            case "--rate":
                options.rate = try Bench.value(after: argument, from: &iterator, "1 to 2000 pushes/s") {
                    (1...2000).contains($0)
                }
            case "--interval":
                options.interval = try Bench.value(after: argument, from: &iterator, "seconds ≥ 1") { $0 >= 1 }
            case "--seed":
                options.seed = try Bench.value(after: argument, from: &iterator, "an unsigned integer")
            case "--gateway":
                options.gateway = try Bench.value(after: argument, from: &iterator, "a path")
            case "--json": options.json = true
            case "--help", "-h":
                print(usage)
                exit(0)
            default: throw Bench.Failure(description: "unknown option \(argument)\n\(usage)")
            }
        }
        return options
    }

    static func run(arguments: [String]) async throws {
        let options = try parse(arguments)
        guard getuid() == 0 else {
            throw Bench.Failure(description: "rouse-bench chaos needs root (network namespaces and veth pairs)")
        }
        let seed = options.seed ?? UInt64.random(in: 1...UInt64.max >> 1)
        let certs = try GatewayBench.certsDirectory()
        let executable = try options.gateway ?? GatewayBench.sibling("rouse-gateway")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-chaos-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // A 0700 parent (a checkout under /root, say) must not keep PostgreSQL's user out of its directory.
        chmod(directory, 0o755)
        let network = try ChaosNetwork(nodes: options.nodes)
        // What the benchmark started, stopped at its end, or at Ctrl-C or SIGTERM (nodes, agents and PostgreSQL run
        // in process groups of their own, and the namespaces would outlive us).
        let started = Started(network: network, directory: directory)
        started.stopOnSignals()
        var keepLogs = false
        defer {
            started.stop()
            if !keepLogs { try? FileManager.default.removeItem(atPath: directory) }
        }
        let progress = Progress()
        progress.say(
            "seed \(seed); \(options.nodes) nodes, \(options.devices) devices, \(options.agents) agents, \(options.rate) pushes/s"
        )
        let postgres = try await BenchPostgres.start(
            in: directory + "/pg", listen: ["127.0.0.1"] + network.outsideAddresses, trust: network.subnet)
        started.set(postgres)
        let database = try await postgres.createDatabase("chaos")
        let store = try GatewayConfiguration.openStore(database: database)
        let now = Gateway.systemMilliseconds()
        let ids = (0..<options.devices).map { "chaos-\($0)" }
        let credentials = try Gateway.provisionDevices(store: store, ids: ids, now: now)
        let tokens = try Gateway.provisionTokens(store: store, deviceIDs: ids, topic: "com.example.rouse", now: now)
        let secrets = try (0..<options.agents).map { _ in
            try Gateway.makeEnrollmentSecret(store: store, now: now, validity: .seconds(3600))
        }
        let certificate = try GatewayBench.serverCertificate(
            for: network.insideAddresses, directory: directory, certs: certs)
        let cluster = try await ChaosCluster.start(
            executable: executable, network: network, databasePort: postgres.port, directory: directory,
            certs: certs, certificate: certificate)
        started.set(cluster)
        let members = try await ChaosAgents.start(
            secrets: secrets, gateways: network.insideAddresses.map { "https://\($0):\(ChaosCluster.devicePort)" },
            directory: directory, certs: certs, executable: try GatewayBench.sibling("rouse-agent"),
            handler: try GatewayBench.sibling("rouse-example-handler"))
        started.set(members)
        let ledger = ChaosLedger()
        let key = try ProviderToken.privateKey(
            pem: String(contentsOfFile: certs + "/apns-key.p8", encoding: .utf8))
        let sign: @Sendable (Int64) -> String? = {
            try? ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: $0).signed(with: key)
        }
        var random = SplitMix64(seed: seed)

        let end = ContinuousClock.now + .seconds(options.seconds)
        let deviceSeeds = credentials.map { _ in random.next() }
        let devices = Task {
            await withTaskGroup(of: Void.self) { group in
                for (index, credential) in credentials.enumerated() {
                    group.addTask {
                        var device = ChaosDevice(
                            index: index, credential: credential, cluster: cluster, ledger: ledger, certs: certs,
                            seed: deviceSeeds[index])
                        await device.run()
                    }
                }
            }
        }
        let pusherSeed = random.next()
        let faultSeed = random.next()
        let pusher = Task {
            var provider = ChaosProvider(
                cluster: cluster, ledger: ledger, tokens: tokens, agents: members, sign: sign, rate: options.rate,
                seed: pusherSeed)
            await provider.run(until: end)
        }
        let faults = Task {
            var faults = ChaosFaults(
                cluster: cluster, postgres: postgres, agents: members, interval: options.interval, seed: faultSeed)
            return await faults.run(until: end, progress: progress, ledger: ledger)
        }
        await pusher.value
        let faultCounts = await faults.value
        progress.say("pushing stopped; every fault healed; draining")
        await cluster.healAll()
        await members.healAll()
        // Drained: every push answered 200 arrived at its device or was logged by its handler (120 s at most).
        let deadline = ContinuousClock.now + .seconds(120)
        var drained = false
        while !drained {
            await ledger.absorb(handed: await members.handed())
            drained = await ledger.drained()
            if drained || ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        devices.cancel()
        await devices.value
        let result = await ledger.result()
        keepLogs = !result.clean
        var figures: [(String, String)] = [
            ("seconds", "\(options.seconds)"), ("seed", "\(seed)"), ("nodes", "\(options.nodes)"),
            ("devices", "\(options.devices)"), ("agents", "\(options.agents)"), ("postgres", postgres.version),
            ("faults", faultCounts.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")),
            ("pushes_answered_200", "\(result.accepted) (\(result.agentAccepted) of them VoIP pushes for the agents)"),
            ("received", "\(result.received) (\(result.handed) logged by the agents' handlers)"),
            ("lost", "\(result.lost)"), ("twice", "\(result.twice)"),
            ("handed_to_a_handler_twice", "\(result.handedTwice)"),
            ("refused", "\(result.refused) (\(result.refusedButDelivered) of them delivered)"),
            ("unknown_outcome", "\(result.unknown) (\(result.unknownDelivered) of them delivered)"),
            ("not_processed_but_delivered", "\(result.notProcessedDelivered)"),
            ("redelivered_unacknowledged", "\(result.redelivered)"),
            ("channels_opened", "\(result.channels)"),
            (
                "device_latency_p50_p99_max_ms",
                String(
                    format: "%.1f / %.1f / %.0f", GatewayBench.percentile(result.latencies, 0.5),
                    GatewayBench.percentile(result.latencies, 0.99), result.latencies.max() ?? 0)
            ),
            ("drained", drained ? "yes" : "no (120 s)"), ("load_average", SendFloorBench.loadAverage()),
        ]
        if !result.clean { figures.append(("logs_kept_in", directory)) }
        if options.json {
            print(
                "{" + figures.map { "\(JSONText.quoted($0.0)):\(JSONText.quoted($0.1))" }.joined(separator: ",") + "}")
        } else {
            for (name, value) in figures { print("\(name): \(value)") }
        }
        if !result.clean {
            throw Bench.Failure(
                description:
                    "chaos: \(result.lost) lost, \(result.twice) twice, \(result.handedTwice) handed twice, \(result.notProcessedDelivered + result.refusedButDelivered) refused or unread but delivered (gateway logs in \(directory))"
            )
        }
    }

    /// The servers, agents and namespaces of a run, stopped once.
    final class Started: @unchecked Sendable {  // every access holds `lock`
        private let lock = NSLock()
        private var network: ChaosNetwork?
        private var postgres: BenchPostgres?
        private var cluster: ChaosCluster?
        private var agents: ChaosAgents?
        private var sources: [any DispatchSourceSignal] = []

        /// Removed when a signal ends the run (its end keeps it when something was lost).
        private let directory: String

        init(network: ChaosNetwork, directory: String) {
            self.network = network
            self.directory = directory
        }

        func set(_ postgres: BenchPostgres) { lock.withLock { self.postgres = postgres } }
        func set(_ cluster: ChaosCluster) { lock.withLock { self.cluster = cluster } }
        func set(_ agents: ChaosAgents) { lock.withLock { self.agents = agents } }

        /// Agents first (they stop their handlers), then the nodes, the database, the namespaces.
        func stop() {
            let (network, postgres, cluster, agents) = lock.withLock {
                defer {
                    self.network = nil
                    self.postgres = nil
                    self.cluster = nil
                    self.agents = nil
                }
                return (self.network, self.postgres, self.cluster, self.agents)
            }
            agents?.stopAll()
            cluster?.stopAll()
            postgres?.stop()
            network?.remove()
        }

        /// SIGINT and SIGTERM stop everything, then end the process (status 130).
        func stopOnSignals() {
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { [self] in
                    FileHandle.standardError.write(Data("chaos: interrupted; stopping what it started\n".utf8))
                    stop()
                    try? FileManager.default.removeItem(atPath: directory)
                    exit(130)
                }
                source.resume()
                lock.withLock { sources.append(source) }
            }
        }
    }

    /// Progress lines on stderr (the figures go to stdout).
    struct Progress: Sendable {
        let start = ContinuousClock.now

        func say(_ text: String) {
            let elapsed = Int((ContinuousClock.now - start).seconds)
            FileHandle.standardError.write(Data("chaos [\(elapsed) s] \(text)\n".utf8))
        }
    }
}
