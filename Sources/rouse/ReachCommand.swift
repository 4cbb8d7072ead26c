import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import RouseNetlink
import RouseReachability
import RouseSystem
import RouseText

/// `rouse reach`: watch and print network reachability.
struct ReachCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reach", abstract: "Network reachability.", subcommands: [Watch.self, Status.self])

    /// `rouse reach watch TARGET… [--json]`: prints each change with a timestamp and the reason.
    ///
    /// Synchronous on purpose (see `RouseMain`): the lines are printed on the monitor's thread by a
    /// synchronous handler, and the main thread only waits for a signal, so an idle watcher sleeps in
    /// `poll` with nothing else scheduled.
    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Print every reachability or path change of the targets (host, IP, LOCAL,REMOTE, or 0.0.0.0).")

        @Argument(help: "Targets: a host name, an IP address, an address pair LOCAL,REMOTE, or 0.0.0.0 / :: / any.")
        var targets: [String]

        @Flag(help: "One JSON object per line (timestamps in microseconds).")
        var json = false

        @Option(help: "Monitor the network namespace at this path (e.g. /run/netns/NAME).")
        var netns: String?

        func validate() throws {
            guard !targets.isEmpty else { throw ValidationError("give at least one target") }
            _ = try parsedTargets(targets)
        }

        func run() throws {
            let json = json
            let monitor = try startMonitor(targets: try parsedTargets(targets), netns: netns) { monitor in
                monitor.addSynchronousHandler { ReachabilityLines.print($0, json: json) }
            }
            withExtendedLifetime(monitor) {
                // Until SIGINT/SIGTERM (default action) or a closed stdout ends the process.
                while true { pause() }
            }
        }
    }

    /// `rouse reach status [TARGET…] [--json]`: the machine's view and per-target results.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Print interfaces and types, addresses, default routes, and each target's result.")

        @Argument(help: "Targets (default: 0.0.0.0, the general routing status).")
        var targets: [String] = []

        @Flag(help: "Print one JSON object.")
        var json = false

        @Option(help: "Inspect the network namespace at this path (e.g. /run/netns/NAME).")
        var netns: String?

        func validate() throws {
            _ = try parsedTargets(targets)
        }

        func run() async throws {
            let wanted = targets.isEmpty ? [ReachabilityTarget.anyNetwork] : try parsedTargets(targets)
            let monitor = try startMonitor(targets: wanted, netns: netns)
            defer { monitor.stop() }
            // Host names resolve asynchronously: wait for their first results (event-driven, at most 5 s).
            if wanted.contains(where: { monitor.result(for: $0) == nil }) {
                let stream = monitor.events()
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await _ in stream where !wanted.contains(where: { monitor.result(for: $0) == nil }) {
                            return
                        }
                    }
                    group.addTask { try? await Task.sleep(for: .seconds(5)) }
                    await group.next()
                    group.cancelAll()
                }
            }
            let routes = try ReachOutput.defaultRoutes(netns: netns, monitor: monitor)
            print(
                json ? ReachOutput.statusJSON(monitor, wanted, routes) : ReachOutput.statusText(monitor, wanted, routes)
            )
        }
    }
}

private func parsedTargets(_ texts: [String]) throws -> [ReachabilityTarget] {
    var targets: [ReachabilityTarget] = []
    for text in texts {
        do throws(ReachabilityError) {
            targets.append(try ReachabilityTarget(parsing: text))
        } catch {
            throw ValidationError("bad target \(error.context)")
        }
    }
    return targets
}

private func startMonitor(
    targets: [ReachabilityTarget], netns: String?, subscribe: (ReachabilityMonitor) -> Void = { _ in }
) throws -> ReachabilityMonitor {
    var logger = Logger(label: "rouse.reach")
    logger.logLevel = .notice
    let monitor = ReachabilityMonitor(configuration: .init(networkNamespacePath: netns), logger: logger)
    for target in targets { monitor.watch(target) }
    subscribe(monitor)
    do {
        try monitor.start()
    } catch {
        throw ValidationError("cannot start the reachability monitor: \(error)")
    }
    return monitor
}

/// Text and JSON renderings for `rouse reach`.
enum ReachOutput {
    /// A result as `rouse reach watch` writes it (one writer: `ReachabilityLines.resultObject`), for embedding.
    static func resultObject(_ result: ReachabilityResult) -> JSONValue {
        JSONValue(parsing: ReachabilityLines.resultObject(result)) ?? [:]
    }

    /// Default routes (all tables), dumped from the kernel in the monitor's namespace.
    static func defaultRoutes(netns: String?, monitor: ReachabilityMonitor) throws -> [RouteMessage] {
        try ReachabilitySnapshot.defaultRoutes(networkNamespacePath: netns)
    }

    static func routeText(_ route: RouteMessage, _ model: NetworkModel) -> String {
        let family = route.family == 10 ? "v6" : "v4"
        var text = "default(\(family))"
        if let gateway = route.gateway { text += " via \(gateway)" }
        for hop in route.nexthops {
            text += " dev \(model.interface(hop.interfaceIndex).name)"
            if hop.isLinkDown { text += " linkdown" }
            if hop.isDead { text += " dead" }
        }
        if let metric = route.priority { text += " metric \(metric)" }
        if route.table != 254 { text += " table \(route.table)" }
        return text
    }

    static func statusText(_ monitor: ReachabilityMonitor, _ targets: [ReachabilityTarget], _ routes: [RouteMessage])
        -> String
    {
        let model = monitor.model
        var lines = ["interfaces:"]
        for index in model.links.keys.sorted() {
            guard let link = model.links[index] else { continue }
            let interface = model.interface(index)
            var state = link.isUp ? "up" : "down"
            if link.isUp && !link.hasCarrier { state += ",no-carrier" }
            lines.append(
                "  \(interface.name) #\(index) \(interface.type.rawValue) \(state)\(link.kind.map { " kind=\($0)" } ?? "")"
            )
            for address in (model.addresses[index] ?? []).sorted(by: { $0.address < $1.address }) {
                lines.append("    \(address.address)/\(address.prefixLength)\(address.isUsable ? "" : " (tentative)")")
            }
        }
        lines.append("default routes:")
        if routes.isEmpty { lines.append("  none") }
        for route in routes { lines.append("  " + routeText(route, model)) }
        lines.append("targets:")
        for target in targets {
            let result =
                monitor.result(for: target).map { "\($0) usable=\($0.isUsable)" } ?? "unknown (name not resolved yet)"
            lines.append("  \(target): \(result)")
        }
        return lines.joined(separator: "\n")
    }

    static func statusJSON(_ monitor: ReachabilityMonitor, _ targets: [ReachabilityTarget], _ routes: [RouteMessage])
        -> String
    {
        let model = monitor.model
        let interfaces: [JSONValue] = model.links.keys.sorted().compactMap { index in
            guard let link = model.links[index] else { return nil }
            let interface = model.interface(index)
            let addresses = (model.addresses[index] ?? []).sorted(by: { $0.address < $1.address })
            return [
                "name": .string(interface.name), "index": .integer(Int64(index)),
                "type": .string(interface.type.rawValue), "up": .bool(link.isUp), "carrier": .bool(link.hasCarrier),
                "kind": .string(link.kind ?? ""),
                "addresses": .array(addresses.map { .string("\($0.address)/\($0.prefixLength)") }),
            ]
        }
        let defaults = routes.map { JSONValue.string(routeText($0, model)) }
        let results: [JSONValue] = targets.map { target in
            var object: [String: JSONValue] = ["target": .string(target.description)]
            if let result = monitor.result(for: target) { object["result"] = resultObject(result) }
            return .object(object)
        }
        return JSONValue.object([
            "interfaces": .array(interfaces), "defaultRoutes": .array(defaults), "targets": .array(results),
        ])
        .text
    }
}
