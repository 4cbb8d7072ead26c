import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import Metrics
import Prometheus
import RouseBuildInfo
import RouseDaemon
import RouseGateway
import RouseSystem
import ServiceLifecycle

/// `rouse-gateway --config FILE`: runs the gateway in the foreground until SIGTERM or SIGINT, then drains; started
/// by `main.swift`.
struct RouseGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rouse-gateway",
        abstract: "APNs-compatible push gateway with device channels and store-and-forward.",
        version: BuildInfo.versionText)

    @Option(name: .long, help: "The configuration file (JSON).")
    var config: String

    @Flag(name: .long, help: "Log one JSON object per line instead of text.")
    var json = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(name: .long, help: "Seconds that open streams get to finish on shutdown.")
    var gracePeriod: Int = 5

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level: '\(logLevel)' is not a log level")
        }
        let json = self.json
        RouseLogging.bootstrap(level: level, json: json)
        let logger = Logger(label: "rouse.gateway")
        let configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration.load(path: config)
        } catch {
            logger.critical("bad configuration", metadata: ["error": "\(error)"])
            throw ExitCode(78)  // EX_CONFIG
        }
        let gateway: Gateway
        do {
            gateway = try Gateway(configuration: configuration, logger: logger)
        } catch let error as GatewayError where error.isMissingLibrary {
            // Starting again will not help until libpq5 is installed: EX_CONFIG, which the unit does not restart
            // (RestartPreventExitStatus=78). A store that cannot be reached yet exits 1 and is restarted.
            logger.critical("cannot start", metadata: ["error": "\(error)"])
            throw ExitCode(78)
        }
        // swift-metrics users in the process (libraries) report into the gateway's /metrics registry.
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: gateway.metrics.registry))
        let service = GatewayService(gateway: gateway, gracePeriod: .seconds(gracePeriod)) {
            SystemdNotifier.notify("READY=1\nSTATUS=serving")
            // A line tests and scripts can wait for.
            let line =
                "rouse-gateway ready provider=\(gateway.providerAddress) device=\(gateway.deviceAddress) "
                + "admin=\(gateway.adminAddress.map { "\($0)" } ?? "none")"
                + (gateway.webPushAddress.map { " webpush=\($0)" } ?? "") + "\n"
            // Best effort: a closed stdout (EPIPE) must not end a gateway that is serving.
            Sys.writeStandardOutput(line)
        }
        // No signals for ServiceLifecycle to trap: it would do so with libdispatch sources. main.swift takes them.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: service)], logger: logger))
        for signal in [SIGTERM, SIGINT] {
            DaemonSignals.on(signal) { Task { await group.triggerGracefulShutdown() } }
        }
        try await group.run()
        SystemdNotifier.notify("STOPPING=1")
    }
}
