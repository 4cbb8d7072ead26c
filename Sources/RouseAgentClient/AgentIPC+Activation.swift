import RouseActivation
import RouseText
import RouseWire

extension AgentEvent.Activation {
    /// The `activation` message telling a holder `event` for its session `session`.
    public init(_ event: ActivationMessage, session: String) {
        // One wire shape for events (ActivationMessage's Codable): its members are ours, by name.
        let wire = (try? JSONCoding.value(of: event)).flatMap { try? JSONCoding.decode(EventWire.self, from: $0) }
        self.init(
            session: session, event: wire?.event ?? event.event, reason: wire?.reason, shouldResume: wire?.shouldResume)
    }

    /// The event (`event`, `reason`, `shouldResume`), nil for an event this library does not know or one that
    /// lacks its reason.
    public var activationMessage: ActivationMessage? {
        let wire = EventWire(event: event, reason: reason, shouldResume: shouldResume)
        return (try? JSONCoding.value(of: wire)).flatMap { try? JSONCoding.decode(ActivationMessage.self, from: $0) }
    }

    private struct EventWire: Codable {
        var event: String
        var reason: String?
        var shouldResume: Bool?
    }
}

extension AgentRequest.Activate {
    /// An `activate` request for `session`.
    public init(session: String, configuration: SessionConfiguration, role: ActivationPriority, acceptsDelay: Bool) {
        self.init(
            session: session, category: configuration.category.rawValue, mode: configuration.mode.rawValue,
            options: configuration.options.members.map(\.rawValue), role: role.rawValue, acceptsDelay: acceptsDelay)
    }
}

extension AgentRequest.ReportCall {
    /// A `reportCall` with the call session's `configuration` (nil: the agent's default, `playAndRecord` +
    /// `voiceChat`).
    public init(pushID: String?, callID: String, configuration: SessionConfiguration?) {
        self.init(
            pushID: pushID, callID: callID, category: configuration?.category.rawValue,
            mode: configuration?.mode.rawValue, options: configuration?.options.members.map(\.rawValue))
    }
}

/// The members `activate` and `reportCall` share: a session configuration, by name.
public protocol SessionConfigurationMembers {
    /// `ambient`, `soloAmbient`, `playback`, `record`, `playAndRecord`.
    var category: String? { get }
    /// `default`, `voiceChat`, `spokenAudio`, ….
    var mode: String? { get }
    /// `mixWithOthers`, `duckOthers`, `interruptSpokenAudioAndMixWithOthers`.
    var options: [String]? { get }
}

extension AgentRequest.Activate: SessionConfigurationMembers {}
extension AgentRequest.ReportCall: SessionConfigurationMembers {}

extension SessionConfigurationMembers {
    /// The session configuration in `category`, `mode` and `options`, validated: nil when `category` is
    /// absent; throws a precise ``AgentRequestError`` for unknown names and invalid combinations.
    public func sessionConfiguration() throws(AgentRequestError) -> SessionConfiguration? {
        guard let category else { return nil }
        guard let parsedCategory = SessionCategory(rawValue: category) else {
            throw AgentRequestError(
                code: "badRequest",
                detail:
                    "unknown category \(category) (\(SessionCategory.allCases.map(\.rawValue).joined(separator: ", ")))"
            )
        }
        var parsedMode = SessionMode.default
        if let mode {
            guard let known = SessionMode(rawValue: mode) else {
                throw AgentRequestError(
                    code: "badRequest",
                    detail: "unknown mode \(mode) (\(SessionMode.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            parsedMode = known
        }
        var parsedOptions: SessionOptions = []
        for option in options ?? [] {
            guard let known = SessionOption(rawValue: option) else {
                throw AgentRequestError(
                    code: "badRequest",
                    detail:
                        "unknown option \(option) (\(SessionOption.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            parsedOptions.insert(SessionOptions(known))
        }
        do {
            return try SessionConfiguration(category: parsedCategory, mode: parsedMode, options: parsedOptions)
        } catch {
            throw AgentRequestError(code: error.code.description, detail: error.description)
        }
    }
}
