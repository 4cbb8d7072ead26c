import FoundationEssentials
import RouseCurl
import RouseWire

/// The device side of WebPush subscriptions (docs/webpush.md): what the UnifiedPush distributor calls when an app
/// registers, lists or unregisters, and the minimum urgency it declares.
extension GatewayAPI {
    /// Creates (or returns the existing) subscription for an app's registration; the endpoint goes to the app.
    func createWebPushSubscription(_ request: WebPushSubscriptionRequest, credential: String?) async throws
        -> WebPushSubscription
    {
        let body = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
        let response = try await curl.send(
            self.request("POST", "/device/v1/webpush", credential: credential, body: body))
        guard response.status == 201 || response.status == 200 else {
            throw AgentError.gateway("webpush: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONDecoder().decode(WebPushSubscription.self, from: Data(response.body))
    }

    /// The device's live subscriptions.
    func webPushSubscriptions(credential: String?) async throws -> [WebPushSubscription] {
        let response = try await curl.send(request("GET", "/device/v1/webpush", credential: credential))
        guard response.status == 200 else {
            throw AgentError.gateway("webpush: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return try JSONDecoder().decode(WebPushSubscriptionList.self, from: Data(response.body)).subscriptions
    }

    /// Deletes a subscription: its senders get 410 from then on.
    func deleteWebPushSubscription(id: String, credential: String?) async throws {
        let response = try await curl.send(request("DELETE", "/device/v1/webpush/\(id)", credential: credential))
        guard response.status == 200 || response.status == 404 else {
            throw AgentError.gateway("webpush: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    /// Declares the minimum urgency on the open channel (messages below it are withheld by the gateway).
    func setMinimumUrgency(_ urgency: WebPushUrgency, credential: String?) async throws {
        let body = String(decoding: try JSONEncoder().encode(WebPushUrgencyRequest(urgency: urgency)), as: UTF8.self)
        let response = try await curl.send(request("POST", "/device/v1/urgency", credential: credential, body: body))
        guard response.status == 200 else {
            throw AgentError.gateway("urgency: \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    /// The channel request, declaring the `webpush` feature and the minimum urgency when the agent reads WebPush.
    func channelRequest(credential: String?, webPushUrgency: WebPushUrgency?) -> CurlRequest {
        var channel = request("GET", "/device/v1/channel", credential: credential, stream: true)
        if let webPushUrgency {
            channel.headers.append((name: ChannelFeatures.header, value: ChannelFeatures.webPush))
            channel.headers.append((name: ChannelFeatures.urgencyHeader, value: webPushUrgency.rawValue))
        }
        return channel
    }
}
