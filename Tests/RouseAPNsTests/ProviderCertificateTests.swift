import RouseAPNs
import Testing

/// Hand-built DER (short lengths only) so the tests do not depend on the parser's library.
func der(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
    precondition(content.count < 128)
    return [tag, UInt8(content.count)] + content
}
func utf8String(_ text: String) -> [UInt8] { der(0x0C, Array(text.utf8)) }
func sequence(_ parts: [UInt8]...) -> [UInt8] { der(0x30, parts.flatMap { $0 }) }

/// The topics extension as Apple issues it and as `certs/` generates it.
func topicsExtension(_ bundle: String) -> [UInt8] {
    sequence(
        utf8String(bundle), sequence(utf8String("app")),
        utf8String(bundle + ".voip"), sequence(utf8String("voip")),
        utf8String(bundle + ".complication"), sequence(utf8String("complication"))
    )
}

@Suite("Provider certificates")
struct ProviderCertificateTests {
    @Test func readsTopicsAndEnvironments() throws {
        let certificate = try ProviderCertificate(
            subjectUID: "com.example.app",
            extensions: [
                ProviderCertificate.topicsOID: topicsExtension("com.example.app"),
                ProviderCertificate.developmentOID: [0x05, 0x00],
                ProviderCertificate.productionOID: [0x05, 0x00],
            ],
            verification: .ok
        )
        #expect(certificate.topics == ["com.example.app", "com.example.app.voip", "com.example.app.complication"])
        #expect(certificate.topicKinds["com.example.app.voip"] == ["voip"])
        #expect(certificate.environments == [.sandbox, .production])
        #expect(certificate.isMultiTopic)
        #expect(certificate.defaultTopic == nil)
    }

    @Test func acceptsOctetStringWrapping() throws {
        let certificate = try ProviderCertificate(
            subjectUID: nil,
            extensions: [
                ProviderCertificate.topicsOID: der(0x04, topicsExtension("a.b")), ProviderCertificate.productionOID: [],
            ],
            verification: .ok
        )
        #expect(certificate.topics.count == 3)
        #expect(certificate.environments == [.production])
    }

    @Test func uidIsTheTopicWithoutExtension() throws {
        let certificate = try ProviderCertificate(
            subjectUID: "com.example.legacy",
            extensions: [ProviderCertificate.developmentOID: []],
            verification: .expired
        )
        #expect(certificate.topics == ["com.example.legacy"])
        #expect(certificate.defaultTopic == "com.example.legacy")
        #expect(certificate.verification == .expired)
    }

    @Test(arguments: [
        [UInt8](),
        [0x30],
        [0x30, 0x05, 0x0C],
        der(0x02, [0x01]),
        sequence(der(0x02, [0x01])),
        sequence(sequence(utf8String("app"))),
        sequence(utf8String("a"), sequence(der(0x02, [0x01]))),
        sequence(utf8String("a")) + [0x00],
        [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],
    ])
    func badTopicsExtension(bytes: [UInt8]) {
        #expect(throws: ProviderCertificateError.badTopicsExtension("")) {
            try ProviderCertificate(
                subjectUID: "x", extensions: [ProviderCertificate.topicsOID: bytes], verification: .ok)
        }
    }

    @Test func noTopicAtAll() {
        #expect(throws: ProviderCertificateError.noTopics) {
            try ProviderCertificate(subjectUID: nil, extensions: [:], verification: .ok)
        }
        #expect(throws: ProviderCertificateError.noTopics) {
            try ProviderCertificate(
                subjectUID: "x", extensions: [ProviderCertificate.topicsOID: sequence()], verification: .ok)
        }
    }
}

@Suite("Provider certificates: lenient reading")
struct ProviderCertificateReadingTests {
    @Test func unreadableExtensionsBecomeBadCertificate() {
        let certificate = ProviderCertificate.reading(
            subjectUID: "x",
            extensions: [ProviderCertificate.topicsOID: [0x30, 0x01], ProviderCertificate.developmentOID: []],
            verification: .ok
        )
        guard case .failed = certificate.verification else {
            Issue.record("expected .failed, got \(certificate.verification)")
            return
        }
        var auth = ProviderConnectionAuth(
            serverEnvironment: .sandbox, keys: APNsKeyRegistry(), certificate: certificate)
        #expect(auth.authenticate(authorization: nil, now: APNsTime(seconds: 0)) == .badCertificate)
    }
}
