import Foundation
import RouseActivation

extension AgentMessage {
    /// An `activation` message telling a holder `event` for its session `session`.
    public init(activation event: ActivationMessage, session: String, requestID: Int? = nil) {
        self.init(type: .activation)
        self.session = session
        self.requestID = requestID
        // One wire shape for events (ActivationMessage's Codable): its members are ours, by name.
        let wire = (try? JSONEncoder().encode(event)).flatMap { try? JSONDecoder().decode(EventWire.self, from: $0) }
        self.event = wire?.event ?? event.event
        self.reason = wire?.reason
        self.shouldResume = wire?.shouldResume
    }

    /// The activation event this message carries (`event`, `reason`, `shouldResume`), nil when it carries none
    /// or an event this library does not know.
    public var activationEvent: ActivationMessage? {
        guard event != nil else { return nil }
        let wire = EventWire(event: event ?? "", reason: reason, shouldResume: shouldResume)
        return (try? JSONEncoder().encode(wire)).flatMap { try? JSONDecoder().decode(ActivationMessage.self, from: $0) }
    }

    /// An `activate` request for `session`.
    public init(
        activate session: String, configuration: SessionConfiguration, role: ActivationPriority, acceptsDelay: Bool
    ) {
        self.init(type: .activate)
        self.session = session
        setConfiguration(configuration)
        self.role = role.rawValue
        self.acceptsDelay = acceptsDelay
    }

    /// Sets `category`, `mode` and `options` from a configuration.
    public mutating func setConfiguration(_ configuration: SessionConfiguration) {
        category = configuration.category.rawValue
        mode = configuration.mode.rawValue
        options = configuration.options.members.map(\.rawValue)
    }

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

    private struct EventWire: Codable {
        var event: String
        var reason: String?
        var shouldResume: Bool?
    }
}

/// The agent answered a request with an `error` frame (or the connection closed first).
public struct AgentRequestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The error code: `badRequest`, `incompatible-option`, `notAuthorized`, `connectionClosed`, ….
    public let code: String
    /// What was wrong.
    public let detail: String

    /// An error.
    public init(code: String, detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
