import RouseDBus
import RouseWire
import Testing

@testable import RouseAgent

/// The distributor's calls as typed values (docs/unifiedpush.md) and the RFC 8030 §5.3 minimum urgency.
struct UnifiedPushDistributorTests {
    static func call(_ interface: String, _ member: String, _ arguments: [DBusValue]) -> DBusMethodCall {
        DBusMethodCall(
            sender: ":1.7", path: UnifiedPushDistributor.path, interface: interface, member: member,
            arguments: arguments)
    }

    @Test func callsParseAndMalformedOnesAreIgnored() {
        let v2 = UnifiedPushDistributor.distributor2
        let v1 = UnifiedPushDistributor.distributor1
        let register = Self.call(
            v2, "Register",
            [
                .vardict([
                    ("service", .string("org.kde.tokodon")), ("token", .string("t")), ("description", .string("d")),
                ])
            ])
        #expect(
            UnifiedPushDistributor.parse(register)
                == .register(.init(version: 2, service: "org.kde.tokodon", token: "t", description: "d", vapid: nil)))
        // The interface may be omitted: the signature tells the version.
        #expect(
            UnifiedPushDistributor.parse(
                Self.call("", "Register", [.string("org.kde.tokodon"), .string("t"), .string("")]))
                == .register(.init(version: 1, service: "org.kde.tokodon", token: "t", description: nil, vapid: nil)))
        #expect(
            UnifiedPushDistributor.parse(Self.call(v2, "Unregister", [.vardict([("token", .string("t"))])]))
                == .unregister(version: 2, token: "t"))
        #expect(
            UnifiedPushDistributor.parse(Self.call(v1, "Unregister", [.string("t")]))
                == .unregister(version: 1, token: "t"))
        #expect(
            UnifiedPushDistributor.parse(Self.call("org.freedesktop.DBus.Introspectable", "Introspect", []))
                == .introspect)
        #expect(UnifiedPushDistributor.parse(Self.call(v2, "Frobnicate", [])) == .other)
        // Malformed: a token of the wrong type, a missing service, an unknown-format key, three ints.
        let malformed: [DBusMethodCall] = [
            Self.call(v2, "Register", [.vardict([("service", .string("org.kde.tokodon")), ("token", .uint32(1))])]),
            Self.call(v2, "Register", [.vardict([("token", .string("t"))])]),
            Self.call(
                v2, "Register",
                [.vardict([("service", .string("org.kde.tokodon")), ("token", .string("t")), ("vapid", .string("k"))])]),
            Self.call(v1, "Register", [.uint32(1), .uint32(2), .uint32(3)]),
            Self.call(v2, "Unregister", [.vardict([])]),
        ]
        for call in malformed {
            guard case .malformed = UnifiedPushDistributor.parse(call) else {
                Issue.record("not refused: \(call.arguments)")
                continue
            }
        }
    }

    @Test(
        arguments: [
            (false, 90, false, WebPushUrgency.veryLow), (true, 90, false, .low), (false, nil, true, .low),
            (true, 50, true, .normal), (true, 15, false, .high), (true, nil, false, .low),
        ] as [(Bool, Double?, Bool, WebPushUrgency)])
    func minimumUrgency(onBattery: Bool, percentage: Double?, metered: Bool, expected: WebPushUrgency) {
        #expect(
            UnifiedPushDistributor.minimumUrgency(onBattery: onBattery, percentage: percentage, metered: metered)
                == expected)
    }

    @Test func introspectionNamesBothVersions() {
        let xml = UnifiedPushDistributor.introspection
        #expect(xml.contains(#"<interface name="org.unifiedpush.Distributor2">"#))
        #expect(xml.contains(#"<interface name="org.unifiedpush.Distributor1">"#))
        #expect(xml.contains(#"<arg name="args" type="a{sv}" direction="in"/>"#))
    }
}
