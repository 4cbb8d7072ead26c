/// A push as the rules see it.
package struct AgentPush: Sendable, Equatable, Codable {
    /// The gateway's delivery id (what is acknowledged).
    package var id: String
    /// APNs push type (`voip`, `background`, `alert`…).
    package var pushType: String
    /// APNs topic.
    package var topic: String
    /// Base64 payload.
    package var payload: String
    /// APNs id (de-duplication key across reconnects).
    package var apnsID: String
    /// UNIX seconds after which the gateway stops offering it (0 = now or never).
    package var expiration: Int64
    /// UNIX milliseconds when the gateway accepted it.
    package var receivedAt: Int64
    /// `apns-collapse-id`: an alert shown with the same one replaces the one shown before (absent: none sent).
    package var collapseID: String?

    /// A push.
    package init(
        id: String, pushType: String, topic: String, payload: String, apnsID: String, expiration: Int64,
        receivedAt: Int64, collapseID: String? = nil
    ) {
        self.id = id
        self.pushType = pushType
        self.topic = topic
        self.payload = payload
        self.apnsID = apnsID
        self.expiration = expiration
        self.receivedAt = receivedAt
        self.collapseID = collapseID
    }

    /// Whether this is a VoIP push.
    package var isVoIP: Bool { pushType == "voip" }

    /// What the de-duplication window remembers of a handed push: its topic and its `apns-id`. The id is the
    /// provider's choice, so it is only unique within a provider's topic: keyed by the id alone, one provider
    /// could suppress another's push by reusing its id.
    package var deduplicationKey: String { topic + " " + apnsID }
}
