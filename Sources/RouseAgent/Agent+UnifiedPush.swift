import FoundationEssentials
import Logging
import RouseAgentCore
import RouseDBus
import RouseText
import RouseWire

/// The UnifiedPush distributor (docs/unifiedpush.md): on the session bus, `org.unifiedpush.Distributor.rouse`
/// registers apps (a gateway WebPush subscription each, its endpoint handed to the app with `NewEndpoint`), delivers
/// the channel's `webpush` records with the app's `Message` (D-Bus activation starts it), and acknowledges a message
/// to the gateway only when the app's reply returns its id. No D-Bus reply is ever awaited on the actor's turn:
/// replies come back as steps of their own.
extension Agent {
    /// Whether the distributor is configured (it may still have failed to start).
    var unifiedPushEnabled: Bool { configuration.session?.unifiedPushBus != nil }

    /// Waits for the distributor's start; true when it runs. The channel declares the `webpush` feature only then: a
    /// channel whose WebPush records no app could get would fill the gateway's window of unacknowledged records.
    func unifiedPushReady() async -> Bool {
        guard unifiedPushEnabled else { return false }
        await unifiedPush.starting?.value
        return unifiedPush.connection != nil
    }

    /// Connects to the session bus, exports the distributor's object, takes its name, then purges registrations
    /// whose app is gone. Without a bus, or with the name taken, there is no distributor (logged).
    func startUnifiedPush() {
        guard let bus = configuration.session?.unifiedPushBus else { return }
        unifiedPush.starting = Task {
            do throws(DBusError) {
                let connection = try await DBusConnection.connect(bus)
                let registration = try await connection.export(path: UnifiedPushDistributor.path) { call, later in
                    self.unifiedPushCall(call, later)
                }
                guard try await connection.requestName(UnifiedPushDistributor.name) else {
                    self.logger.error(
                        "UnifiedPush distributor name taken: no distributor",
                        metadata: ["name": "\(UnifiedPushDistributor.name)"])
                    await registration.cancel()
                    await connection.close()
                    return
                }
                self.unifiedPushStarted(connection, registration)
            } catch {
                self.logger.warning(
                    "UnifiedPush bus unreachable: no distributor", metadata: ["error": "\(error)", "bus": "\(bus)"])
            }
        }
    }

    private func unifiedPushStarted(_ connection: DBusConnection, _ registration: DBusRegistration) {
        unifiedPush.connection = connection
        unifiedPush.registration = registration
        // Off the start path: the channel waits for the distributor, not for the apps' answers to pings.
        background.append(Task { await self.purgeUnifiedPush() })
        logger.info(
            "UnifiedPush distributor started",
            metadata: [
                "name": "\(UnifiedPushDistributor.name)", "registrations": "\(unifiedPush.book.registrations.count)",
            ])
    }

    /// Ends the export and the connection (the name goes with it).
    func stopUnifiedPush() async {
        unifiedPush.starting?.cancel()
        await unifiedPush.registration?.cancel()
        unifiedPush.registration = nil
        await unifiedPush.connection?.close()
        unifiedPush.connection = nil
    }

    /// The distributor's counters (status, tests).
    var unifiedPushStatus: UnifiedPushStatus? { unifiedPushEnabled ? unifiedPush.status : nil }

    // MARK: Calls from apps (on the bus's loop: answer or hand over, never block)

    nonisolated private func unifiedPushCall(_ call: DBusMethodCall, _ later: DBusDeferredReply) -> DBusMethodReply? {
        switch UnifiedPushDistributor.parse(call) {
        case .introspect:
            return .values([.string(UnifiedPushDistributor.introspection)])
        case .register(let request):
            Task { await self.unifiedPushRegister(request, sender: call.sender, reply: later) }
            return nil
        case .unregister(let version, let token):
            Task { await self.unifiedPushUnregister(token: token, version: version) }
            return version == 1 ? .values([]) : UnifiedPushDistributor.empty
        case .malformed(let version, let member, let problem):
            logger.notice(
                "UnifiedPush call ignored",
                metadata: ["member": "\(member)", "problem": "\(problem)", "sender": "\(call.sender)"])
            Task { await self.unifiedPushMalformed() }
            return version == 1
                ? .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: problem)
                : UnifiedPushDistributor.empty
        case .other:
            return .notHandled
        }
    }

    private func unifiedPushMalformed() { unifiedPush.malformed += 1 }

    /// `Register`: who may, the caps, the gateway subscription, the reply, then `NewEndpoint`.
    private func unifiedPushRegister(
        _ request: UnifiedPushDistributor.Register, sender: String, reply: DBusDeferredReply
    ) async {
        let metadata: Logger.Metadata = ["service": "\(request.service)", "version": "\(request.version)"]
        func refuse(_ reason: UnifiedPushDistributor.Failure, _ why: String) {
            unifiedPush.refused[reason.rawValue, default: 0] += 1
            logger.notice(
                "UnifiedPush registration refused",
                metadata: metadata.merging(["reason": "\(reason.rawValue)", "why": "\(why)"]) { $1 })
            reply.send(UnifiedPushDistributor.failed(version: request.version, reason))
        }
        guard let connection = unifiedPush.connection else { return refuse(.internalError, "no bus") }
        guard unifiedPush.registering < unifiedPush.limits.maximumRegistering else {
            return refuse(.internalError, "\(unifiedPush.limits.maximumRegistering) registrations under way")
        }
        unifiedPush.registering += 1
        defer { unifiedPush.registering -= 1 }
        guard await Self.mayRegister(request.service, sender: sender, on: connection) else {
            return refuse(.unauthorized, "the caller neither owns the service nor can it be activated")
        }
        let limits = unifiedPush.limits
        let admission = unifiedPush.book.admit(
            service: request.service, token: request.token, vapid: request.vapid, maximumPerApp: limits.perApp,
            maximumPerDevice: limits.perDevice)
        let replacing: UnifiedPushBook.Registration?
        switch admission {
        case .known(var known):
            unifiedPushRegisteredAgain(request.service)
            // An app updated from version 1 to 2 (or with a new description) keeps its endpoint; it is delivered to
            // by the version it registered with last.
            if known.version != request.version || known.description != request.description {
                known.version = request.version
                known.description = request.description
                unifiedPush.book.add(known)
                durable.setUnifiedPush(unifiedPush.book)
            }
            unifiedPush.registered += 1
            reply.send(UnifiedPushDistributor.succeeded(version: request.version))
            newEndpoint(known, version: request.version)
            return
        case .tokenTaken: return refuse(.unauthorized, "token registered by another service")
        case .overAppLimit: return refuse(.actionRequired, "over \(limits.perApp) registrations for the app")
        case .overDeviceLimit: return refuse(.actionRequired, "over \(limits.perDevice) registrations on the device")
        case .new(let old): replacing = old
        }
        guard link.reachable, durable.deviceID != nil else { return refuse(.network, "gateway unreachable") }
        let subscription: WebPushSubscription
        do {
            subscription = try await link.api.createWebPushSubscription(
                WebPushSubscriptionRequest(app: request.service, token: Self.registrationLabel(), vapid: request.vapid),
                credential: durable.credential)
        } catch let error as AgentError where error.detail.hasPrefix("webpush: ") {
            // The gateway answered: its own cap (429) asks the user to act; anything else is ours.
            return refuse(
                error.detail.hasPrefix("webpush: 429") ? .actionRequired : .internalError, "gateway: \(error.detail)")
        } catch {
            return refuse(.network, "gateway: \(error)")
        }
        let registration = UnifiedPushBook.Registration(
            token: request.token, service: request.service, version: request.version,
            description: request.description, vapid: request.vapid, subscription: subscription.id,
            endpoint: subscription.endpoint, createdAt: wallMilliseconds)
        if let raced = unifiedPush.book.registration(token: request.token), raced.vapid == request.vapid,
            raced.subscription != replacing?.subscription
        {
            // Another Register of the token won while this one waited for the gateway: its endpoint stands.
            unifiedPush.book.add(registration)
            unifiedPush.book.add(raced)
        } else {
            unifiedPush.book.add(registration)
        }
        durable.setUnifiedPush(unifiedPush.book)
        unifiedPush.registered += 1
        unifiedPushRegisteredAgain(request.service)
        logger.info(
            "UnifiedPush app registered",
            metadata: metadata.merging(["subscription": "\(subscription.id.prefix(8))"]) { $1 })
        reply.send(UnifiedPushDistributor.succeeded(version: request.version))
        if let current = unifiedPush.book.registration(token: request.token) {
            newEndpoint(current, version: request.version)
        }
        deletePendingSubscriptions()
    }

    /// An app registered: its strikes are cleared and a pause of its deliveries ends (the handler rules' "until
    /// registered again"). Its withheld messages come with the next channel.
    private func unifiedPushRegisteredAgain(_ service: String) {
        if unifiedPush.strikes.registered(service: service) {
            logger.notice(
                "UnifiedPush deliveries resumed: the app registered again", metadata: ["service": "\(service)"])
        }
    }

    /// The device's label for a subscription: 16 random bytes, hex (the connector's token never leaves the device).
    private static func registrationLabel() -> String {
        Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
    }

    /// Whether `sender` may register `service`: it owns the name, or the bus can start it (a `.service` file).
    private static func mayRegister(_ service: String, sender: String, on connection: DBusConnection) async -> Bool {
        if let owner = try? await connection.nameOwner(service), owner == sender { return true }
        return await activatableNames(connection).contains(service)
    }

    /// The names the bus can start (`ListActivatableNames`); empty when the bus does not answer.
    private static func activatableNames(_ connection: DBusConnection) async -> Set<String> {
        let reply = try? await connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "ListActivatableNames")
        return Set((reply?.first?.elements ?? []).compactMap(\.string))
    }

    /// Calls `NewEndpoint` on the app (starting it if need be), off the actor's turn.
    private func newEndpoint(_ registration: UnifiedPushBook.Registration, version: Int) {
        guard let connection = unifiedPush.connection else { return }
        let arguments = UnifiedPushDistributor.newEndpointArguments(
            version: version, token: registration.token, endpoint: registration.endpoint)
        let interface = UnifiedPushDistributor.connectorInterface(version)
        let timeout = unifiedPush.limits.replyTimeout
        let logger = logger
        Task {
            do throws(DBusError) {
                if version == 1 {
                    try await connection.send(
                        destination: registration.service, path: UnifiedPushDistributor.connectorPath,
                        interface: interface, member: "NewEndpoint", arguments: arguments)
                } else {
                    _ = try await connection.call(
                        destination: registration.service, path: UnifiedPushDistributor.connectorPath,
                        interface: interface, member: "NewEndpoint", arguments: arguments, timeout: timeout)
                }
            } catch {
                logger.warning(
                    "UnifiedPush NewEndpoint failed",
                    metadata: ["service": "\(registration.service)", "error": "\(error)"])
            }
        }
    }

    /// `Unregister`: the registration goes, its subscription is deleted (senders get 410), the app is told.
    private func unifiedPushUnregister(token: String, version: Int) {
        guard let removed = unifiedPush.book.remove(token: token) else { return }  // unknown tokens are ignored
        durable.setUnifiedPush(unifiedPush.book)
        logger.info("UnifiedPush app unregistered", metadata: ["service": "\(removed.service)"])
        tellUnregistered(removed, version: version, ownRequest: true)
        deletePendingSubscriptions()
    }

    private func tellUnregistered(_ registration: UnifiedPushBook.Registration, version: Int, ownRequest: Bool) {
        guard let connection = unifiedPush.connection else { return }
        let arguments = UnifiedPushDistributor.unregisteredArguments(
            version: version, token: registration.token, ownRequest: ownRequest)
        let interface = UnifiedPushDistributor.connectorInterface(version)
        let timeout = unifiedPush.limits.replyTimeout
        Task {
            if version == 1 {
                try? await connection.send(
                    destination: registration.service, path: UnifiedPushDistributor.connectorPath,
                    interface: interface, member: "Unregistered", arguments: arguments)
            } else {
                _ = try? await connection.call(
                    destination: registration.service, path: UnifiedPushDistributor.connectorPath,
                    interface: interface, member: "Unregistered", arguments: arguments, timeout: timeout)
            }
        }
    }

    /// Deletes the subscriptions the book lists for deletion (one pass at a time; what fails stays listed, retried
    /// at the next change or channel open).
    func deletePendingSubscriptions() {
        guard !unifiedPush.deleting, !unifiedPush.book.pendingDeletions.isEmpty else { return }
        unifiedPush.deleting = true
        let api = link.api
        let credential = durable.credential
        let ids = unifiedPush.book.pendingDeletions
        Task {
            var done: [String] = []
            for id in ids {
                do {
                    try await api.deleteWebPushSubscription(id: id, credential: credential)
                    done.append(id)
                } catch {
                    self.logger.warning("WebPush subscription not deleted yet", metadata: ["error": "\(error)"])
                }
            }
            self.subscriptionsDeleted(done)
        }
    }

    private func subscriptionsDeleted(_ ids: [String]) {
        unifiedPush.deleting = false
        for id in ids { unifiedPush.book.deleted(id) }
        durable.setUnifiedPush(unifiedPush.book)
    }

    // MARK: Purge

    /// Unregisters the apps that can no longer be started (no `.service` file) and are not running, and applies
    /// the 30-day rule: an app silent for 30 days is pinged with `NewEndpoint` and unregistered if it does not answer.
    func purgeUnifiedPush() async {
        guard let connection = unifiedPush.connection else { return }
        let activatable = await Self.activatableNames(connection)
        var gone: [UnifiedPushBook.Registration] = []
        for registration in unifiedPush.book.registrations where !activatable.contains(registration.service) {
            if (try? await connection.nameOwner(registration.service)) != nil { continue }
            gone.append(registration)
        }
        for registration in unifiedPush.book.silent(nowMilliseconds: wallMilliseconds) {
            let arguments = UnifiedPushDistributor.newEndpointArguments(
                version: 2, token: registration.token, endpoint: registration.endpoint)
            do throws(DBusError) {
                _ = try await connection.call(
                    destination: registration.service, path: UnifiedPushDistributor.connectorPath,
                    interface: UnifiedPushDistributor.connector2, member: "NewEndpoint", arguments: arguments,
                    timeout: unifiedPush.limits.replyTimeout)
                unifiedPush.book.acknowledged(token: registration.token, nowMilliseconds: wallMilliseconds)
            } catch {
                gone.append(registration)
            }
        }
        for registration in gone where unifiedPush.book.remove(token: registration.token) != nil {
            unifiedPush.purged += 1
            logger.notice(
                "UnifiedPush registration purged",
                metadata: ["service": "\(registration.service)", "version": "\(registration.version)"])
            tellUnregistered(registration, version: registration.version, ownRequest: false)
        }
        durable.setUnifiedPush(unifiedPush.book)
        deletePendingSubscriptions()
    }

    // MARK: Delivery

    /// A `webpush` record: handed to its app with `Message` (off the actor's turn); acknowledged when the reply
    /// returns the id (version 1: once sent). Not acknowledged otherwise: the gateway offers it again.
    func webPushReceived(_ message: ChannelRecord.WebPush) async {
        await unifiedPush.starting?.value
        guard let connection = unifiedPush.connection else { return }
        let metadata: Logger.Metadata = ["delivery": "\(message.id)"]
        guard let registration = unifiedPush.book.registration(subscription: message.subscription) else {
            unifiedPush.orphaned += 1
            logger.info("WebPush message for no registration dropped", metadata: metadata)
            link.ack(message.id)
            return
        }
        guard !unifiedPush.inFlight.contains(message.id) else { return }
        guard unifiedPush.inFlight.count < unifiedPush.limits.maximumInFlight else {
            logger.warning("UnifiedPush deliveries at their maximum: message left at the gateway", metadata: metadata)
            return
        }
        guard let bytes = Data(base64Encoded: message.payload), !bytes.isEmpty else {
            unifiedPush.orphaned += 1
            logger.warning("WebPush message with a bad payload dropped", metadata: metadata)
            link.ack(message.id)
            return
        }
        let service = registration.service
        switch unifiedPush.strikes.admit(service: service, now: now) {
        case .deliver: break
        case .probe:
            logger.info("UnifiedPush probe delivery to a paused app", metadata: ["service": "\(service)"])
        case .paused:
            logger.debug(
                "UnifiedPush app paused after strikes: message left at the gateway",
                metadata: metadata.merging(["service": "\(service)"]) { $1 })
            return
        }
        unifiedPush.inFlight.insert(message.id)
        unifiedPush.delivered += 1
        let version = registration.version
        let arguments = UnifiedPushDistributor.messageArguments(
            version: version, token: registration.token, message: Array(bytes), id: message.id)
        let interface = UnifiedPushDistributor.connectorInterface(version)
        let timeout = unifiedPush.limits.replyTimeout
        Task {
            var outcome: String?
            do throws(DBusError) {
                if version == 1 {
                    try await connection.send(
                        destination: registration.service, path: UnifiedPushDistributor.connectorPath,
                        interface: interface, member: "Message", arguments: arguments)
                } else {
                    let reply = try await connection.call(
                        destination: registration.service, path: UnifiedPushDistributor.connectorPath,
                        interface: interface, member: "Message", arguments: arguments, timeout: timeout)
                    if reply.first?.stringKeyed?["id"]?.string != message.id { outcome = "reply without the id" }
                }
            } catch {
                outcome = "\(error)"
            }
            self.messageAnswered(message.id, token: registration.token, service: service, failure: outcome)
        }
    }

    /// The app's answer: acknowledged to the gateway, or a strike (the message stays at the gateway).
    private func messageAnswered(_ id: String, token: String, service: String, failure: String?) {
        unifiedPush.inFlight.remove(id)
        guard failure == nil else {
            unifiedPush.failed += 1
            let paused = unifiedPush.strikes.failed(service: service, now: now)
            logger.warning(
                "UnifiedPush delivery failed: a strike, left for the gateway to offer again",
                metadata: [
                    "delivery": "\(id)", "service": "\(service)", "error": "\(failure ?? "")",
                    "strikes": "\(unifiedPush.strikes.strikeCount(service, now: now))",
                ])
            if paused {
                logger.warning(
                    "UnifiedPush deliveries paused until the app registers again or acknowledges a probe",
                    metadata: ["service": "\(service)", "limit": "\(unifiedPush.strikes.limit)"])
            }
            return
        }
        unifiedPush.acknowledged += 1
        link.ack(id)
        if unifiedPush.strikes.acknowledged(service: service) {
            logger.notice("UnifiedPush deliveries resumed: the app acknowledged", metadata: ["service": "\(service)"])
        }
        // The 30-day rule counts days: the book is saved again at most hourly for acknowledgements alone.
        let before = unifiedPush.book.registration(token: token)?.lastAckAt ?? 0
        unifiedPush.book.acknowledged(token: token, nowMilliseconds: wallMilliseconds)
        if wallMilliseconds - before >= 3_600_000 { durable.setUnifiedPush(unifiedPush.book) }
    }

    // MARK: Urgency

    /// The minimum urgency the device's power and network call for (RFC 8030 §5.3).
    var unifiedPushUrgency: WebPushUrgency {
        UnifiedPushDistributor.minimumUrgency(
            onBattery: session.power?.onBattery ?? false, percentage: session.power?.percentage,
            metered: session.pathExpensive)
    }

    /// Power or the network's cost changed: the channel declares the new minimum urgency.
    func unifiedPushConditionsChanged() {
        guard unifiedPushEnabled else { return }
        let urgency = unifiedPushUrgency
        let channel = link.channel
        Task { await channel?.setMinimumUrgency(urgency) }
    }

    /// The minimum urgency the gateway knows from the open channel (tests).
    package func channelMinimumUrgency() async -> String? {
        guard unifiedPushEnabled else { return nil }
        return await link.channel?.declaredUrgency?.rawValue
    }

    /// The channel opened: subscriptions left to delete are retried.
    func unifiedPushChannelChanged(_ state: ChannelStateMachine.State) {
        guard unifiedPushEnabled, state == .open else { return }
        deletePendingSubscriptions()
    }
}
