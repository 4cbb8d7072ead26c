import FoundationEssentials

/// The WebPush ingest listener (`"webpush"` in the configuration file; docs/webpush.md): where application servers
/// `POST /wp/<id>`, over HTTP/1.1 or HTTP/2 on TLS, and the built-in Matrix push gateway on the same origin.
package struct WebPushConfiguration: Sendable {
    /// The listener (TLS: `certificate` and `privateKey`; `clientCA` is not used).
    package var listener: GatewayConfiguration.Listener
    /// The public origin endpoints are made of (`https://push.example.com`, with a port if not 443): endpoint URLs
    /// are `<origin>/wp/<id>`, and VAPID tokens must name it as their `aud`.
    package var origin: String
    /// Live subscriptions per device at most (then `429 tooManySubscriptions`, counted as
    /// `limit_hits_total{listener="device",limit="webpush-subscriptions-device"}`).
    package var maxSubscriptionsPerDevice = 256
    /// Live subscriptions per app on one device at most (`limit="webpush-subscriptions-app"`).
    package var maxSubscriptionsPerApp = 8
    /// Messages per second one subscription may receive on average (then `429` with `Retry-After`).
    package var messagesPerSecond: Double = 10
    /// Messages one subscription may receive in a burst.
    package var burst: Double = 100

    /// RFC 8030 §7.2: a push service must accept bodies of up to 4096 bytes; larger ones get 413.
    package static let maxBodyBytes = 4096

    /// A configuration.
    package init(listener: GatewayConfiguration.Listener, origin: String) {
        self.listener = listener
        self.origin = origin
    }

    /// The origin without a trailing `/`.
    var normalizedOrigin: String { origin.hasSuffix("/") ? String(origin.dropLast()) : origin }

    /// What is wrong with `origin`, if anything: it must be `https://host[:port]` with nothing after.
    package static func originProblem(_ origin: String) -> String? {
        guard let url = URL(string: origin), url.scheme == "https", let host = url.host, !host.isEmpty,
            url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil, url.user == nil
        else { return "'\(origin)' is not https://host[:port]" }
        return nil
    }
}
