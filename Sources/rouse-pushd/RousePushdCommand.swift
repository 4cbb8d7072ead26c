import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import Metrics
import Prometheus
import RouseBuildInfo
import RouseDaemon
import RousePush
import RousePushCore
import RouseSystem
import RouseText
import Synchronization

/// `rouse-pushd --config FILE`: the push service in the foreground. SIGHUP reloads the configuration (apps, pools,
/// limits) without dropping a push; SIGTERM or SIGINT stop accepting, let pushes in flight get their outcomes, exit.
struct RousePushdCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rouse-pushd",
        abstract: "Push service: warm APNs connections behind a local API with synchronous per-push outcomes.",
        version: BuildInfo.versionText)

    @Option(name: .long, help: "The configuration file (JSON).")
    var config: String

    @Flag(name: .long, help: "Log one JSON object per line instead of text.")
    var json = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(name: .long, help: "Seconds that pushes in flight get to finish on shutdown.")
    var gracePeriod: Int = 10

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level: '\(logLevel)' is not a log level")
        }
        RouseLogging.bootstrap(level: level, json: json)
        let logger = Logger(label: "rouse.pushd")
        let configuration: PushServiceConfiguration
        let bearer: String?
        do {
            configuration = try PushServiceConfiguration.load(path: config)
            bearer = try Self.bearerToken(configuration)
        } catch {
            logger.critical("bad configuration", metadata: ["error": "\(error)"])
            throw ExitCode(78)  // EX_CONFIG
        }
        let metrics = PushServiceMetrics()
        // The senders' swift-metrics (attempts, outcomes by reason, connections opened) report into /metrics too.
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics.registry))
        let service: PushService
        let server: PushAPIServer
        do {
            // One loop for the API connections and every pool's bulk connections: a push goes from its request to
            // its HTTP/2 stream, and its outcome back, by direct calls (docs/push-service.md, "Figures").
            service = try PushService(configuration: configuration, metrics: metrics, logger: logger, sharedLoop: true)
            server = try PushAPIServer(
                configuration: configuration, bearerToken: bearer, handler: PushAPIHandler(service: service),
                metrics: metrics, logger: logger, loop: service.sharedLoop)
        } catch {
            logger.critical("cannot start", metadata: ["error": "\(error)"])
            throw ExitCode(78)
        }
        var h2c: PushH2CServer?
        if let address = configuration.tcp?.h2cAddress, let bearer {
            do {
                h2c = try PushH2CServer(
                    address: address, bearerToken: bearer, handler: PushAPIHandler(service: service),
                    maxBodyBytes: configuration.limits?.maxBodyBytes ?? (1 << 20),
                    maxConnections: configuration.limits?.maxConnections ?? 256, metrics: metrics, logger: logger)
            } catch {
                logger.critical("cannot start the h2c listener", metadata: ["error": "\(error)"])
                await server.shutdown(gracePeriod: .zero)
                throw ExitCode(78)
            }
        }
        let path = config
        DaemonSignals.on(SIGHUP) {
            SystemdNotifier.notify("RELOADING=1")
            do {
                let fresh = try PushServiceConfiguration.load(path: path)
                if fresh.unix != configuration.unix || fresh.tcp != configuration.tcp
                    || fresh.limits != configuration.limits
                {
                    logger.warning("listener and limit changes take effect at the next restart")
                }
                try service.reload(fresh)
            } catch {
                logger.error("reload failed: the previous configuration stays", metadata: ["error": "\(error)"])
            }
            SystemdNotifier.notify("READY=1")
        }
        let stop = StopSignal()
        for signal in [SIGTERM, SIGINT] { DaemonSignals.on(signal) { stop.fire() } }
        SystemdNotifier.notify("READY=1\nSTATUS=serving")
        let line =
            "rouse-pushd ready unix=\(configuration.unix.path) tcp=\(server.tcpAddress.map { "\($0)" } ?? "none") "
            + "h2c=\(h2c?.address ?? "none") "
            + "apps=\(configuration.apps.count) pools=\(service.poolCount)\n"
        Sys.writeStandardOutput(line)
        logger.notice(
            "serving", metadata: ["unix": "\(configuration.unix.path)", "apps": "\(configuration.apps.count)"])
        await stop.wait()
        SystemdNotifier.notify("STOPPING=1")
        logger.notice("stopping", metadata: ["pending": "\(service.pending)"])
        await h2c?.shutdown(gracePeriod: .seconds(gracePeriod))
        await server.shutdown(gracePeriod: .seconds(gracePeriod))
        await service.shutdown()
    }

    /// The TCP listener's bearer token, read from its file (at least 32 characters).
    static func bearerToken(_ configuration: PushServiceConfiguration) throws -> String? {
        guard let tcp = configuration.tcp else { return nil }
        guard let text = try? String(contentsOfFile: tcp.bearerTokenFile, encoding: .utf8) else {
            throw PushServiceError.configuration("cannot read tcp.bearerTokenFile \(tcp.bearerTokenFile)")
        }
        let token = text.trimmingWhitespace()
        guard token.utf8.count >= 32, token.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw PushServiceError.configuration("the bearer token must be ≥ 32 visible ASCII characters")
        }
        return token
    }
}

/// SIGTERM or SIGINT arrived (fired from the main thread, awaited by the service task).
final class StopSignal: Sendable {
    private let state = Mutex<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.fired = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.fired { return true }
                s.waiter = c
                return false
            }
            if now { c.resume() }
        }
    }
}
