import Logging
import ServiceLifecycle

/// `rouse-gateway` as a swift-service-lifecycle `Service`: runs until graceful shutdown (SIGTERM), then
/// drains (see `Gateway.shutdown`).
package struct GatewayService: Service {
    private let gateway: Gateway
    private let gracePeriod: Duration
    private let onReady: @Sendable () -> Void

    /// A service around a started gateway; `onReady` runs once it serves (e.g. sd_notify READY=1).
    package init(gateway: Gateway, gracePeriod: Duration = .seconds(5), onReady: @escaping @Sendable () -> Void = {}) {
        self.gateway = gateway
        self.gracePeriod = gracePeriod
        self.onReady = onReady
    }

    package func run() async throws {
        onReady()
        try? await gracefulShutdown()
        await gateway.shutdown(gracePeriod: gracePeriod)
    }
}
