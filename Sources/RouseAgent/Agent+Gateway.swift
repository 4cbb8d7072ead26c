import Logging
import RouseAgentCore
import RouseReachability
import RouseWire

/// The agent's steps on the gateway link (``GatewayLink``): enrollment, reachability, the channel's state, tokens
/// and the handler report.
extension Agent {
    func enrollAndConnect() async {
        // The channel's backoff (configurable) also paces enrollment attempts.
        var delay = configuration.backoff.initial
        while durable.deviceID == nil && !Task.isCancelled {
            do {
                let secret = configuration.endpoint.clientCertificate == nil ? configuration.enrollmentSecret : nil
                if secret == nil && configuration.endpoint.clientCertificate == nil {
                    logger.error("not enrolled and no enrollment secret or device certificate configured")
                    return
                }
                let (device, credential) = try await link.api.enroll(secret: secret)
                durable.enrolled(device: device, credential: credential)
                logger.info("enrolled", metadata: ["device": "\(device)"])
            } catch {
                logger.warning("enrollment failed", metadata: ["error": "\(error)"])
                try? await time.clock.sleep(for: delay)
                delay = min(delay * 2, configuration.backoff.maximum)
            }
        }
        guard !Task.isCancelled else { return }
        var webPush: (@Sendable (ChannelRecord.WebPush) async -> Void)?
        if await unifiedPushReady() { webPush = { message in await self.webPushReceived(message) } }
        let channel = DeviceChannel(
            api: link.api, credential: durable.credential, backoff: configuration.backoff, clock: time.clock,
            logger: logger,
            events: DeviceChannel.Events(
                push: { push in await self.received(push) },
                state: { state in await self.channelChanged(state) },
                webPush: webPush))
        link.connected(channel)
        await channel.setMinimumUrgency(unifiedPushUrgency)
        await refreshTokens()
        if configuration.assumeReachable {
            await reachabilityChanged(true)
            return
        }
        startReachability()
    }

    private func startReachability() {
        let targetText = configuration.reachabilityTarget ?? configuration.endpoint.host
        guard let target = try? ReachabilityTarget(parsing: targetText) else {
            logger.error("bad reachability target; assuming reachable", metadata: ["target": "\(targetText)"])
            Task { await reachabilityChanged(true) }
            return
        }
        let monitor = ReachabilityMonitor(
            configuration: .init(
                networkNamespacePath: configuration.networkNamespacePath,
                evaluator: .init(expensiveInterfaces: configuration.expensiveInterfaces)),
            logger: logger)
        do {
            try monitor.start()
        } catch {
            logger.error("reachability monitor failed; assuming reachable", metadata: ["error": "\(error)"])
            Task { await reachabilityChanged(true) }
            return
        }
        link.watching(monitor)
        monitor.watch(target)
        let events = monitor.events()
        background.append(
            Task {
                for await event in events where event.target == target {
                    switch event {
                    case .changed(let change):
                        self.pathExpensive(change.result.path.isExpensive)
                        await self.reachabilityChanged(change.result.isUsable)
                    case .sourceAddressChanged: await self.link.channel?.sourceAddressChanged()
                    }
                }
            })
    }

    package func reachabilityChanged(_ usable: Bool) async {
        let changed = link.reachability(usable)
        transfersNetwork(usable)
        if changed { fetchOpportunity(wakeUp: usable) }
        if changed && usable { keepAliveOpportunity() }
        await link.channel?.reachability(usable)
        guard changed else { return }
        for name in handlers.names {
            apply(name, handlers.step(name) { $0.reachability(usable) })
        }
    }

    private func channelChanged(_ new: ChannelStateMachine.State) async {
        guard link.channelChanged(new) else { return }
        unifiedPushChannelChanged(new)
        reportHandlers()
        await refreshTokens()
        fetchOpportunity(wakeUp: true)
        keepAliveOpportunity()
    }

    /// Fetches missing tokens and hands new or changed ones to connected handlers. A failed request is retried
    /// with the channel's backoff (doubling from `initial` to `maximum`) until every topic has its token.
    func refreshTokens() async {
        var failed = false
        for name in handlers.names {
            guard let handler = handlers.configuration(of: name) else { continue }
            for topic in handler.topics where durable.tokens[topic] == nil {
                do {
                    durable.setToken(
                        try await link.api.token(topic: topic, credential: durable.credential), topic: topic)
                } catch {
                    failed = true
                    logger.warning("token request failed", metadata: ["topic": "\(topic)", "error": "\(error)"])
                }
            }
            handTokens(name)
        }
        guard failed else {
            link.tokensComplete()
            return
        }
        guard let delay = link.nextTokenRetry() else { return }
        let clock = time.clock
        link.retryingTokens(
            Task {
                try? await clock.sleep(for: delay)
                guard !Task.isCancelled else { return }
                await self.retryTokens()
            })
    }

    private func retryTokens() async {
        link.tokenRetryFired()
        await refreshTokens()
    }

    /// Sends the handler its tokens when they are new to it (PushKit's didUpdate credentials).
    func handTokens(_ name: String, force: Bool = false) {
        guard let handler = handlers.configuration(of: name), let connection = handlers.connection(of: name) else {
            return
        }
        for topic in handler.topics {
            guard let token = durable.tokens[topic] else { continue }
            if !force && durable.handedToken(name, topic: topic) == token { continue }
            if connection.send(.credentials(.init(topic: topic, token: token))) {
                durable.handed(name, token: token, topic: topic)
            }
        }
    }

    /// The public tokens by topic (for tests and status).
    package func tokens() -> [String: String] { durable.tokens }

    /// Sends the handler report to the gateway when it differs from the one the gateway last accepted (after
    /// a channel open: always once). Runs beside push handling, one request at a time; a failure is logged and
    /// retried on the next change or channel open.
    func reportHandlers() {
        let body = handlers.report()
        guard link.shouldReport(body, enrolled: durable.deviceID != nil) else { return }
        let api = link.api
        let credential = durable.credential
        link.reporting(
            Task {
                do {
                    try await api.reportHandlers(body, credential: credential)
                    self.handlerReportDone(body, error: nil)
                } catch {
                    self.handlerReportDone(nil, error: error)
                }
            })
    }

    private func handlerReportDone(_ sent: DeviceHandlerReport?, error: (any Error)?) {
        if link.reportDone(sent, error: error) { reportHandlers() }
    }

    /// Time from the last "reachable again" to the channel's `hello` (benchmark figure).
    package func lastReconnectDuration() async -> Duration? {
        await link.channel?.lastOpenAfterReachable
    }
}
