/// The UnifiedPush distributor's registrations (docs/unifiedpush.md): which app (`service`, its D-Bus name) holds
/// which connector token, at which gateway subscription and endpoint, and when it last acknowledged a message. Kept in
/// the agent's sealed durable state, so an app that registers again after a restart gets the same endpoint.
///
/// A plain value: the agent's distributor shell asks it what a `Register` means (`admit`), records the outcome, and
/// asks which registrations the 30-day rule touches (``silent(nowMilliseconds:)``).
package struct UnifiedPushBook: Codable, Sendable, Equatable {
    /// Registrations per app at most (an app needs one per account; more is a runaway app): `ACTION_REQUIRED`.
    package static let defaultMaximumPerApp = 8
    /// Registrations per device at most (the gateway's default cap on subscriptions is 256): `ACTION_REQUIRED`.
    package static let defaultMaximumPerDevice = 64
    /// An app that acknowledged nothing for this long gets a `NewEndpoint` ping; if that fails, it is unregistered
    /// (the UnifiedPush Android rule, applied on D-Bus too).
    package static let silenceLimitMilliseconds: Int64 = 30 * 24 * 3600 * 1000

    /// One app's registration.
    package struct Registration: Codable, Sendable, Equatable {
        /// The connector's token (≤ 100 bytes); never sent to the gateway.
        package var token: String
        /// The app's D-Bus name, also the name activated to deliver.
        package var service: String
        /// The interface version the app registered with: 1 (`Distributor1`) or 2 (`Distributor2`).
        package var version: Int
        /// The app's description (≤ 100 bytes), if it gave one.
        package var description: String?
        /// The application server's VAPID key, if the app gave one.
        package var vapid: String?
        /// The gateway subscription's id (the endpoint's last path segment).
        package var subscription: String
        /// The endpoint handed to the app.
        package var endpoint: String
        /// When it was made, UNIX milliseconds.
        package var createdAt: Int64
        /// When the app last acknowledged a message (or answered a ping), UNIX milliseconds; ``createdAt`` at first.
        package var lastAckAt: Int64

        /// A registration.
        package init(
            token: String, service: String, version: Int, description: String?, vapid: String?, subscription: String,
            endpoint: String, createdAt: Int64
        ) {
            self.token = token
            self.service = service
            self.version = version
            self.description = description
            self.vapid = vapid
            self.subscription = subscription
            self.endpoint = endpoint
            self.createdAt = createdAt
            self.lastAckAt = createdAt
        }
    }

    /// What a `Register` call means for the book.
    package enum Admission: Sendable, Equatable {
        /// The token is registered already for this service and key: the same endpoint again.
        case known(Registration)
        /// The token is registered for another service: refused (a token is unique; another app cannot take it).
        case tokenTaken
        /// A new registration (or a known token with another VAPID key, which needs a new subscription): admitted.
        case new(replacing: Registration?)
        /// The app holds its maximum of registrations already.
        case overAppLimit
        /// The device holds its maximum of registrations already.
        case overDeviceLimit
    }

    /// The registrations, oldest first.
    package private(set) var registrations: [Registration] = []
    /// Gateway subscriptions whose deletion has not been confirmed yet (retried when the channel opens).
    package private(set) var pendingDeletions: [String] = []
    /// An empty book.
    package init() {}

    /// The registration of `token`.
    package func registration(token: String) -> Registration? { registrations.first { $0.token == token } }

    /// The registration whose gateway subscription is `subscription`.
    package func registration(subscription: String) -> Registration? {
        registrations.first { $0.subscription == subscription }
    }

    /// What `Register(service, token, vapid)` means now, with at most `maximumPerApp` registrations per app and
    /// `maximumPerDevice` in all.
    package func admit(
        service: String, token: String, vapid: String?, maximumPerApp: Int = Self.defaultMaximumPerApp,
        maximumPerDevice: Int = Self.defaultMaximumPerDevice
    ) -> Admission {
        if let known = registration(token: token) {
            guard known.service == service else { return .tokenTaken }
            return known.vapid == vapid ? .known(known) : .new(replacing: known)
        }
        if registrations.count(where: { $0.service == service }) >= maximumPerApp { return .overAppLimit }
        if registrations.count >= maximumPerDevice { return .overDeviceLimit }
        return .new(replacing: nil)
    }

    /// Records `registration` (replacing one with the same token; its old subscription is to be deleted).
    package mutating func add(_ registration: Registration) {
        if let old = self.registration(token: registration.token), old.subscription != registration.subscription {
            pendingDeletions.append(old.subscription)
        }
        registrations.removeAll { $0.token == registration.token }
        registrations.append(registration)
    }

    /// Removes `token`'s registration; its subscription is to be deleted at the gateway.
    @discardableResult
    package mutating func remove(token: String) -> Registration? {
        guard let index = registrations.firstIndex(where: { $0.token == token }) else { return nil }
        let removed = registrations.remove(at: index)
        if !pendingDeletions.contains(removed.subscription) { pendingDeletions.append(removed.subscription) }
        return removed
    }

    /// The gateway confirmed the deletion of `subscription` (or it was unknown there).
    package mutating func deleted(_ subscription: String) { pendingDeletions.removeAll { $0 == subscription } }

    /// `token`'s app acknowledged a message (or answered a ping) at `nowMilliseconds`.
    package mutating func acknowledged(token: String, nowMilliseconds: Int64) {
        guard let index = registrations.firstIndex(where: { $0.token == token }) else { return }
        registrations[index].lastAckAt = max(registrations[index].lastAckAt, nowMilliseconds)
    }

    /// The version-2 registrations whose app acknowledged nothing for ``silenceLimitMilliseconds``: each gets a
    /// `NewEndpoint` ping, and is unregistered when the ping fails. (A version-1 app cannot answer: `NewEndpoint` has
    /// no reply there, so it is never pinged nor dropped for silence.)
    package func silent(nowMilliseconds: Int64) -> [Registration] {
        registrations.filter { $0.version >= 2 && nowMilliseconds - $0.lastAckAt >= Self.silenceLimitMilliseconds }
    }
}
