import RouseAPNs
import RouseMockAPNs
import Testing

/// Copies of `certs/apns-key.p8` / `apns-key.pub.pem` (public test material made by openssl), to check that
/// openssl's PKCS#8 and SPKI PEMs are read and that a token signed with one verifies with the other.
enum OpenSSLKeys {
    static let privateP8 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgsx8sZP11SSMS6i9Z
        136z3OWOxCr1UFhKjETvhkLa3CyhRANCAATsr5++sr950T+Uky0i+j3vK9RHmKcK
        D25tK1IawsOrRRKyHg3rqtPhHSrZ6yPw37CrHvdIFYobv/7CcxxueSCh
        -----END PRIVATE KEY-----
        """
    static let publicPEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE7K+fvrK/edE/lJMtIvo97yvUR5in
        Cg9ubStSGsLDq0USsh4N66rT4R0q2esj8N+wqx73SBWKG7/+wnMcbnkgoQ==
        -----END PUBLIC KEY-----
        """
}

@Suite("Engine: key file")
struct EngineKeyFileTests {
    static let json = """
        {
          "bundleID": "com.example.rouse",
          "keys": [
            {"file": "apns-key.p8", "publicKey": "apns-key.pub.pem", "keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1",
             "topics": ["com.example.rouse", "com.example.rouse.voip", "com.example.rouse.complication"]},
            {"publicKey": "apns-key.pub.pem", "keyID": "ROUSEKEY09", "teamID": "ROUSETEAM1",
             "environments": ["production"], "topicSpecific": true, "topics": ["com.example.rouse"]}
          ]
        }
        """

    @Test func keysJSONAsCertsWritesIt() throws {
        let registry = try MockKeyFile.parse(json: Array(Self.json.utf8)) { name in
            name == "apns-key.pub.pem" ? OpenSSLKeys.publicPEM : nil
        }
        #expect(registry.keys.count == 2)
        #expect(registry["ROUSEKEY01"]?.environments == [.sandbox, .production])
        #expect(registry["ROUSEKEY09"]?.isTopicSpecific == true)

        let privateKey = try ProviderToken.privateKey(pem: OpenSSLKeys.privateP8)
        let jwt = try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: F.t0.seconds).signed(
            with: privateKey)
        let mock = MockAPNs(configuration: MockAPNsConfiguration(keys: registry), startedAt: F.t0)
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let request = F.request {
            $0.set("authorization", "bearer " + jwt)
            $0.set("apns-topic", "com.example.rouse.voip")
        }
        #expect(mock.handle(request, connection: &connection, now: F.t0).response?.status == 200)
    }

    @Test(arguments: [
        ("{}", "$.keys"),
        (#"{"keys": [{"keyID": "K", "teamID": "T", "publicKey": "missing.pem"}]}"#, "$.keys[0].publicKey"),
        (
            #"{"keys": [{"keyID": "K", "teamID": "T", "publicKey": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}]}"#,
            "$.keys[0].publicKey"
        ),
        (
            #"{"keys": [{"keyID": "K", "teamID": "T", "publicKey": "x.pem", "environments": ["dev"]}]}"#,
            "$.keys[0].environments[0]"
        ),
        (#"{"keys": [{"teamID": "T", "publicKey": "x.pem"}]}"#, "$.keys[0].keyID"),
    ])
    func badKeyFile(json: String, path: String) {
        do {
            _ = try MockKeyFile.parse(json: Array(json.utf8)) { $0 == "x.pem" ? OpenSSLKeys.publicPEM : nil }
            Issue.record("no error")
        } catch {
            #expect(error == .badKeysFile(""))
            #expect(error.detail.hasPrefix(path), "\(error.detail)")
        }
    }

    /// The topics extension of `certs/provider.pem`, as `openssl asn1parse` shows it.
    @Test func certsProviderTopicsExtension() throws {
        let hex =
            "306A0C11636F6D2E6578616D706C652E726F75736530050C036170700C16636F6D2E6578616D706C652E726F7573652E"
            + "766F697030060C04766F69700C1E636F6D2E6578616D706C652E726F7573652E636F6D706C69636174696F6E300E0C"
            + "0C636F6D706C69636174696F6E"
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        let certificate = try ProviderCertificate(
            subjectUID: "com.example.rouse",
            extensions: [
                ProviderCertificate.topicsOID: bytes, ProviderCertificate.developmentOID: [0x05, 0x00],
                ProviderCertificate.productionOID: [0x05, 0x00],
            ],
            verification: .ok
        )
        #expect(
            certificate.topics == ["com.example.rouse", "com.example.rouse.voip", "com.example.rouse.complication"])
        #expect(certificate.topicKinds["com.example.rouse"] == ["app"])
        #expect(certificate.environments == [.sandbox, .production])
    }
}
