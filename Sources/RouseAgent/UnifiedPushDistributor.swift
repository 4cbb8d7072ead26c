import RouseAgentCore
import RouseDBus
import RouseWire

/// The UnifiedPush D-Bus surface (docs/unifiedpush.md): the distributor's name, object and interfaces, the calls it
/// receives as a typed value, and the calls it makes on connectors. No state: ``UnifiedPushLink`` holds it.
enum UnifiedPushDistributor {
    /// The well-known name the agent owns (`UNIFIEDPUSH_DISTRIBUTOR=rouse` makes KUnifiedPush pick it).
    static let name = "org.unifiedpush.Distributor.rouse"
    /// The distributor's object.
    static let path = "/org/unifiedpush/Distributor"
    /// A connector's object, on the app's own name.
    static let connectorPath = "/org/unifiedpush/Connector"
    static let distributor1 = "org.unifiedpush.Distributor1"
    static let distributor2 = "org.unifiedpush.Distributor2"
    static let connector1 = "org.unifiedpush.Connector1"
    static let connector2 = "org.unifiedpush.Connector2"

    /// `Introspect`'s answer: the specification's interface XML (connectors pick version 2 when it names
    /// `org.unifiedpush.Distributor2`).
    static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" \
        "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect">
              <arg name="xml_data" type="s" direction="out"/>
            </method>
          </interface>
          <interface name="org.unifiedpush.Distributor2">
            <method name="Register">
              <arg name="args" type="a{sv}" direction="in"/>
              <arg name="res" type="a{sv}" direction="out"/>
            </method>
            <method name="Unregister">
              <arg name="args" type="a{sv}" direction="in"/>
              <arg name="res" type="a{sv}" direction="out"/>
            </method>
          </interface>
          <interface name="org.unifiedpush.Distributor1">
            <method name="Register">
              <arg name="serviceName" type="s" direction="in"/>
              <arg name="token" type="s" direction="in"/>
              <arg name="description" type="s" direction="in"/>
              <arg name="registrationResult" type="s" direction="out"/>
              <arg name="registrationResultReason" type="s" direction="out"/>
            </method>
            <method name="Unregister">
              <arg name="token" type="s" direction="in"/>
              <annotation name="org.freedesktop.DBus.Method.NoReply" value="true"/>
            </method>
          </interface>
        </node>

        """

    /// A `Register` call, its arguments checked.
    struct Register: Sendable, Equatable {
        var version: Int
        var service: String
        var token: String
        var description: String?
        var vapid: String?
    }

    /// A call on the distributor's object.
    enum Call: Sendable, Equatable {
        case introspect
        case register(Register)
        case unregister(version: Int, token: String)
        /// A call breaking the specification: ignored (version 2 still answers `{}`, which carries nothing).
        case malformed(version: Int, member: String, problem: String)
        /// Not a method of this object.
        case other
    }

    /// Why a registration failed: the `reason` of a version-2 `REGISTRATION_FAILED`.
    enum Failure: String, Sendable {
        case internalError = "INTERNAL_ERROR"
        case network = "NETWORK"
        case actionRequired = "ACTION_REQUIRED"
        case unauthorized = "UNAUTHORIZED"
    }

    /// The typed call, its arguments checked against the specification's rules.
    static func parse(_ call: DBusMethodCall) -> Call {
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"), ("", "Introspect"): return .introspect
        case (distributor2, "Register"),
            ("", "Register") where call.arguments.first?.stringKeyed != nil:
            return parseRegister2(call.arguments)
        case (distributor2, "Unregister"),
            ("", "Unregister") where call.arguments.first?.stringKeyed != nil:
            guard call.arguments.count == 1, let token = call.arguments.first?.stringKeyed?["token"]?.string else {
                return .malformed(version: 2, member: "Unregister", problem: "no token")
            }
            if let problem = UnifiedPushArguments.checkToken(token) {
                return .malformed(version: 2, member: "Unregister", problem: problem.description)
            }
            return .unregister(version: 2, token: token)
        case (distributor1, "Register"), ("", "Register"):
            let strings = call.arguments.compactMap { $0.stringIfString }
            guard call.arguments.count == 3, strings.count == 3 else {
                return .malformed(version: 1, member: "Register", problem: "not (sss)")
            }
            return checked(
                Register(
                    version: 1, service: strings[0], token: strings[1],
                    description: strings[2].isEmpty ? nil : strings[2], vapid: nil))
        case (distributor1, "Unregister"), ("", "Unregister"):
            guard call.arguments.count == 1, let token = call.arguments.first?.stringIfString else {
                return .malformed(version: 1, member: "Unregister", problem: "not (s)")
            }
            if let problem = UnifiedPushArguments.checkToken(token) {
                return .malformed(version: 1, member: "Unregister", problem: problem.description)
            }
            return .unregister(version: 1, token: token)
        default:
            return .other
        }
    }

    private static func parseRegister2(_ arguments: [DBusValue]) -> Call {
        guard arguments.count == 1, let dictionary = arguments.first?.stringKeyed else {
            return .malformed(version: 2, member: "Register", problem: "not a{sv}")
        }
        guard let service = dictionary["service"]?.stringIfString, let token = dictionary["token"]?.stringIfString
        else {
            return .malformed(version: 2, member: "Register", problem: "service or token missing or not a string")
        }
        var register = Register(version: 2, service: service, token: token, description: nil, vapid: nil)
        if let description = dictionary["description"] {
            guard let text = description.stringIfString else {
                return .malformed(version: 2, member: "Register", problem: "description not a string")
            }
            register.description = text
        }
        if let vapid = dictionary["vapid"] {
            guard let text = vapid.stringIfString else {
                return .malformed(version: 2, member: "Register", problem: "vapid not a string")
            }
            register.vapid = text
        }
        return checked(register)
    }

    private static func checked(_ register: Register) -> Call {
        let member = "Register"
        if let problem = UnifiedPushArguments.checkService(register.service)
            ?? UnifiedPushArguments.checkToken(register.token)
            ?? register.description.flatMap(UnifiedPushArguments.checkDescription)
            ?? register.vapid.flatMap(UnifiedPushArguments.checkVAPID)
        {
            return .malformed(version: register.version, member: member, problem: problem.description)
        }
        return .register(register)
    }

    // MARK: Replies

    /// A successful `Register`'s reply.
    static func succeeded(version: Int) -> DBusMethodReply {
        version == 1
            ? .values([.string("REGISTRATION_SUCCEEDED"), .string("")])
            : .values([.vardict([("success", .string("REGISTRATION_SUCCEEDED"))])])
    }

    /// A failed `Register`'s reply.
    static func failed(version: Int, _ reason: Failure) -> DBusMethodReply {
        version == 1
            ? .values([.string("REGISTRATION_FAILED"), .string(reason.rawValue)])
            : .values([
                .vardict([("success", .string("REGISTRATION_FAILED")), ("reason", .string(reason.rawValue))])
            ])
    }

    /// What a version-2 method answers when there is nothing to say (`Unregister`, an ignored call).
    static let empty = DBusMethodReply.values([.vardict([])])

    // MARK: Calls on connectors

    /// `Message`'s arguments for the version of the app.
    static func messageArguments(version: Int, token: String, message: [UInt8], id: String) -> [DBusValue] {
        let bytes = DBusValue.array(element: "y", message.map { .byte($0) })
        return version == 1
            ? [.string(token), bytes, .string(id)]
            : [.vardict([("token", .string(token)), ("message", bytes), ("id", .string(id))])]
    }

    /// `NewEndpoint`'s arguments.
    static func newEndpointArguments(version: Int, token: String, endpoint: String) -> [DBusValue] {
        version == 1
            ? [.string(token), .string(endpoint)]
            : [.vardict([("token", .string(token)), ("endpoint", .string(endpoint))])]
    }

    /// `Unregistered`'s arguments (version 1 confirms the app's own request with an empty token).
    static func unregisteredArguments(version: Int, token: String, ownRequest: Bool) -> [DBusValue] {
        version == 1 ? [.string(ownRequest ? "" : token)] : [.vardict([("token", .string(token))])]
    }

    /// The interface a connector of `version` serves.
    static func connectorInterface(_ version: Int) -> String { version == 1 ? connector1 : connector2 }

    /// The minimum urgency (RFC 8030 §5.3, as KUnifiedPush derives it): `high` on a low battery (≤ 15 %), `normal` on
    /// battery over a metered network, `low` on either, `very-low` on AC power and an unmetered network.
    static func minimumUrgency(onBattery: Bool, percentage: Double?, metered: Bool) -> WebPushUrgency {
        if onBattery, let percentage, percentage <= 15 { return .high }
        if onBattery && metered { return .normal }
        if onBattery || metered { return .low }
        return .veryLow
    }
}

extension DBusValue {
    /// A `s` value's string (an object path or signature is not a string here).
    fileprivate var stringIfString: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}
