import Foundation
import RouseActivation

/// A message as a test sees it: who gets what.
struct Sent: Equatable, CustomStringConvertible {
    var session: SessionID
    var message: ActivationMessage

    init(_ session: SessionID, _ message: ActivationMessage) {
        self.session = session
        self.message = message
    }

    var description: String { "\(session): \(message)" }
}

/// A hook event as a test sees it.
struct Hooked: Equatable, CustomStringConvertible {
    var kind: HookEvent.Kind
    var session: SessionID

    init(_ kind: HookEvent.Kind, _ session: SessionID) {
        self.kind = kind
        self.session = session
    }

    var description: String { "\(kind.rawValue) \(session)" }
}

extension Array where Element == ActivationEffect {
    /// The messages to holders, in order.
    var sent: [Sent] {
        compactMap {
            guard case .notify(let session, let message) = $0 else { return nil }
            return Sent(session, message)
        }
    }

    /// The hook events, in order.
    var hooked: [Hooked] {
        compactMap {
            guard case .hook(let event) = $0 else { return nil }
            return Hooked(event.kind, event.session)
        }
    }

    /// The messages to one session.
    func sent(to session: SessionID) -> [ActivationMessage] {
        sent.filter { $0.session == session }.map(\.message)
    }
}

/// Short constructors for fixtures.
enum Fixture {
    static func session(_ handler: String, _ name: String = "main") -> SessionID {
        SessionID(handler: HandlerID(handler), name: name)
    }

    static func request(
        _ session: SessionID, _ category: SessionCategory, mode: SessionMode = .default, options: SessionOptions = [],
        priority: ActivationPriority = .media, acceptsDelay: Bool = false
    ) throws -> ActivationRequest {
        ActivationRequest(
            session: session,
            configuration: try SessionConfiguration(category: category, mode: mode, options: options),
            priority: priority, acceptsDelay: acceptsDelay)
    }
}

/// Decodes JSON text in tests.
enum JSONDecoderFactory {
    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
