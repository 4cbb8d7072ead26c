import Crypto
import RouseAPNs
import Testing

@Suite("ES256 provider tokens")
struct ProviderTokenTests {
    static let key = P256.Signing.PrivateKey()

    static func b64(_ text: String) -> String {
        // Test-only encoder (base64url, no padding), independent from the library's.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let bytes = Array(text.utf8)
        var out = ""
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let n = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << UInt32(16 - 8 * $1.offset) }
            for position in 0...chunk.count { out.append(alphabet[Int((n >> UInt32(18 - 6 * position)) & 63)]) }
            index += 3
        }
        return out
    }

    @Test func roundTrip() throws {
        let token = ProviderToken(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_700_000_000)
        let jwt = try token.signed(with: Self.key)
        #expect(jwt.split(separator: ".").count == 3)
        #expect(try ProviderToken.verify(jwt, publicKey: Self.key.publicKey) == token)
        let parsed = try ProviderToken.parse(jwt)
        #expect(parsed.signature.count == 64)
        #expect(throws: ProviderTokenError.badSignature) {
            try ProviderToken.verify(jwt, publicKey: P256.Signing.PrivateKey().publicKey)
        }
    }

    @Test func pemKey() throws {
        let pem = Self.key.pemRepresentation
        let loaded = try ProviderToken.privateKey(pem: pem)
        #expect(loaded.publicKey.rawRepresentation == Self.key.publicKey.rawRepresentation)
        #expect(throws: ProviderTokenError.badPrivateKey("")) { try ProviderToken.privateKey(pem: "garbage") }
    }

    @Test func tamperedClaimsFailSignature() throws {
        let jwt = try ProviderToken(keyID: "K", teamID: "T", issuedAt: 1).signed(with: Self.key)
        let parts = jwt.split(separator: ".")
        let forged = "\(parts[0]).\(Self.b64(#"{"iss":"T","iat":2}"#)).\(parts[2])"
        #expect(throws: ProviderTokenError.badSignature) {
            try ProviderToken.verify(forged, publicKey: Self.key.publicKey)
        }
    }

    static let sig = String(repeating: "A", count: 86)
    static let goodHeader = b64(#"{"alg":"ES256","kid":"K"}"#)
    static let goodClaims = b64(#"{"iss":"T","iat":1700000000}"#)

    @Test(arguments: [
        ("", ProviderTokenError.notThreeParts),
        ("a.b", .notThreeParts),
        ("a.b.c.d", .notThreeParts),
        ("!!.\(goodClaims).\(sig)", .badBase64URL("header")),
        ("\(goodHeader).a=.\(sig)", .badBase64URL("claims")),
        ("\(goodHeader).\(goodClaims).+/", .badBase64URL("signature")),
        ("\(b64("not json")).\(goodClaims).\(sig)", .badJSON("header")),
        ("\(goodHeader).\(b64("[1,2]")).\(sig)", .badJSON("claims")),
        ("\(goodHeader).\(b64(#"{"iss":"T"} x"#)).\(sig)", .badJSON("claims")),
        ("\(b64(#"{"alg":"HS256","kid":"K"}"#)).\(goodClaims).\(sig)", .unsupportedAlgorithm("HS256")),
        ("\(b64(#"{"kid":"K"}"#)).\(goodClaims).\(sig)", .unsupportedAlgorithm("")),
        ("\(b64(#"{"alg":"ES256"}"#)).\(goodClaims).\(sig)", .missingKeyID),
        ("\(b64(#"{"alg":"ES256","kid":7}"#)).\(goodClaims).\(sig)", .missingKeyID),
        ("\(goodHeader).\(b64(#"{"iat":1}"#)).\(sig)", .missingIssuer),
        ("\(goodHeader).\(b64(#"{"iss":"T"}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":"1x"}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":"-1"}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":""}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":"1234567890123456789"}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":"1767225600.5"}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":1e300}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":-1e300}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":true}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":null}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":[1767225600]}"#)).\(sig)", .missingIssuedAt),
        ("\(goodHeader).\(b64(#"{"iss":"T","iat":{"s":1767225600}}"#)).\(sig)", .missingIssuedAt),
        (String(repeating: "a", count: 5000), .tooLong),
    ])
    func parseErrors(token: String, expected: ProviderTokenError) {
        #expect(throws: expected) { try ProviderToken.parse(token) }
    }

    @Test("iat as a string of decimal digits is a time, as kalyke-apns signs it and APNs accepts")
    func stringIssuedAt() throws {
        let claims = Self.b64(#"{"iss":"T","iat":"1767225600"}"#)
        let parsed = try ProviderToken.parse("\(Self.goodHeader).\(claims).\(Self.sig)")
        #expect(parsed.token.issuedAt == 1_767_225_600)
    }

    @Test(
        "iat in every form APNs accepts: an integer, a fraction (PyJWT's time.time()), an exponent, a digit string",
        arguments: [
            (#"1767225600"#, Int64(1_767_225_600)), (#"1767225600.0"#, 1_767_225_600),
            (#"1767225600.999999"#, 1_767_225_600), (#"1767225600.123456"#, 1_767_225_600),
            (#"1.7672256e9"#, 1_767_225_600), (#"17672256005e-1"#, 1_767_225_600), (#""1767225600""#, 1_767_225_600),
            (#"0.5"#, 0), (#"-0.5"#, -1),
        ])
    func issuedAtForms(iat: String, seconds: Int64) throws {
        let claims = Self.b64(#"{"iss":"T","iat":\#(iat)}"#)
        let parsed = try ProviderToken.parse("\(Self.goodHeader).\(claims).\(Self.sig)")
        #expect(parsed.token.issuedAt == seconds)
    }

    @Test func parsesNestedAndEscapedJSON() throws {
        let header = Self.b64(#"{ "alg" : "ES256", "kid":"K\u0041\n", "x":{"y":[1,2,{"z":null}]}, "t":true }"#)
        let parsed = try ProviderToken.parse("\(header).\(Self.goodClaims).\(Self.sig)")
        #expect(parsed.token.keyID == "KA\n")
        #expect(parsed.token.issuedAt == 1_700_000_000)
        #expect(!parsed.isSignatureValid(for: Self.key.publicKey))
    }

    @Test func garbageNeverCrashes() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCxyz019-_.=+/{}\"\\:, \u{0}é".unicodeScalars)
        for length in [0, 1, 2, 3, 5, 17, 64, 300, 4096, 4097] {
            for _ in 0..<20 {
                var text = ""
                for _ in 0..<length {
                    text.unicodeScalars.append(alphabet[Int(generator.next() % UInt64(alphabet.count))])
                }
                _ = try? ProviderToken.parse(text)
            }
        }
        let deep = Self.b64("{\"a\":" + String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000) + "}")
        #expect(throws: ProviderTokenError.badJSON("header")) {
            try ProviderToken.parse("\(deep).\(Self.goodClaims).\(Self.sig)")
        }
        let huge = String(repeating: "a.", count: 1_000_000)
        #expect(throws: ProviderTokenError.tooLong) { try ProviderToken.parse(huge) }
    }
}
