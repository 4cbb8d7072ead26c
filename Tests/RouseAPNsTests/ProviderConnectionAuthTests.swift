import Crypto
import RouseAPNs
import Testing

/// Fixtures: a team with a team-scoped sandbox key, a team-scoped production key, two topic-specific keys
/// (related to each other), an unrelated topic key, and another team's key.
struct AuthFixture {
    static let t0 = APNsTime(seconds: 1_800_000_000)
    let sandboxKey = P256.Signing.PrivateKey()
    let productionKey = P256.Signing.PrivateKey()
    let topicKey = P256.Signing.PrivateKey()
    let relatedTopicKey = P256.Signing.PrivateKey()
    let otherTopicKey = P256.Signing.PrivateKey()
    let otherTeamKey = P256.Signing.PrivateKey()

    var registry: APNsKeyRegistry {
        APNsKeyRegistry([
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEYSANDBOX", publicKey: sandboxKey.publicKey, environments: [.sandbox],
                scope: .team(bundleIDs: ["com.example.app", "com.example.other"])
            ),
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEYPRODUCT", publicKey: productionKey.publicKey,
                environments: [.production], scope: .team(bundleIDs: nil)
            ),
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEYTOPIC01", publicKey: topicKey.publicKey, environments: [.sandbox],
                scope: .topics(["com.example.app"]), relatedKeyID: "KEYTOPIC02"
            ),
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEYTOPIC02", publicKey: relatedTopicKey.publicKey,
                environments: [.sandbox], scope: .topics(["com.example.app"])
            ),
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEYTOPIC03", publicKey: otherTopicKey.publicKey,
                environments: [.sandbox], scope: .topics(["com.example.app"])
            ),
            APNsSigningKey(teamID: "TEAM000002", keyID: "KEYOTHERTM", publicKey: otherTeamKey.publicKey),
        ])
    }

    func bearer(_ key: P256.Signing.PrivateKey, kid: String, team: String = "TEAM000001", iat: APNsTime = t0) -> String
    {
        let jwt = try? ProviderToken(keyID: kid, teamID: team, issuedAt: iat.seconds).signed(with: key)
        return "bearer " + (jwt ?? "")
    }

    func connection(_ environment: APNsEnvironment = .sandbox) -> ProviderConnectionAuth {
        ProviderConnectionAuth(serverEnvironment: environment, keys: registry, certificate: nil)
    }
}

@Suite("Provider connection auth: tokens")
struct ProviderTokenConnectionTests {
    let f = AuthFixture()
    var t0: APNsTime { AuthFixture.t0 }

    @Test func oneStreamUntilAuthenticated() {
        var auth = f.connection()
        #expect(auth.maxConcurrentStreams(configured: 1000) == 1)
        #expect(auth.authenticate(authorization: nil, now: t0) == .missingProviderToken)
        #expect(auth.maxConcurrentStreams(configured: 1000) == 1)
        #expect(auth.authenticate(authorization: f.bearer(f.sandboxKey, kid: "KEYSANDBOX"), now: t0) == nil)
        #expect(auth.maxConcurrentStreams(configured: 1000) == 1000)
        #expect(auth.boundTeamID == "TEAM000001")
        #expect(auth.boundKeyID == "KEYSANDBOX")
    }

    @Test(arguments: [
        (nil, APNsReason.missingProviderToken), ("", .missingProviderToken), ("bearer ", .missingProviderToken),
        ("basic abc", .invalidProviderToken), ("bearer garbage", .invalidProviderToken),
        ("bearer a.b.c", .invalidProviderToken),
    ])
    func malformed(authorization: String?, expected: APNsReason) {
        var auth = f.connection()
        #expect(auth.authenticate(authorization: authorization, now: t0) == expected)
    }

    @Test func invalidTokens() {
        var auth = f.connection()
        // Unknown kid, wrong team for the key, signature by another key.
        #expect(
            auth.authenticate(authorization: f.bearer(f.sandboxKey, kid: "UNKNOWNKEY"), now: t0)
                == .invalidProviderToken)
        #expect(
            auth.authenticate(authorization: f.bearer(f.sandboxKey, kid: "KEYSANDBOX", team: "TEAM000002"), now: t0)
                == .invalidProviderToken
        )
        #expect(
            auth.authenticate(authorization: f.bearer(f.productionKey, kid: "KEYSANDBOX"), now: t0)
                == .invalidProviderToken)
        // Same bad token again: answered from the cache, same reason.
        let bad = f.bearer(f.productionKey, kid: "KEYSANDBOX")
        #expect(auth.authenticate(authorization: bad, now: t0) == .invalidProviderToken)
        #expect(auth.authenticate(authorization: bad, now: t0) == .invalidProviderToken)
        #expect(!auth.isAuthenticated)
        // "Bearer" scheme is case-insensitive.
        let good = f.bearer(f.sandboxKey, kid: "KEYSANDBOX").replacingPrefix("Bearer ")
        #expect(auth.authenticate(authorization: good, now: t0) == nil)
    }

    @Test func issuedAtWindow() {
        var auth = f.connection()
        let token = f.bearer(f.sandboxKey, kid: "KEYSANDBOX")
        #expect(auth.authenticate(authorization: token, now: t0.adding(seconds: 3600)) == nil)
        // The same token, one second past an hour: stale.
        #expect(auth.authenticate(authorization: token, now: t0.adding(seconds: 3601)) == .expiredProviderToken)
        var fresh = f.connection()
        #expect(fresh.authenticate(authorization: token, now: t0.adding(seconds: 7200)) == .expiredProviderToken)
        #expect(fresh.authenticate(authorization: token, now: t0.adding(seconds: -3601)) == .invalidProviderToken)
        #expect(!fresh.isAuthenticated)
    }

    @Test(arguments: [
        (Int64(0), APNsReason?.some(.tooManyProviderTokenUpdates)), (60, .tooManyProviderTokenUpdates),
        (1199, .tooManyProviderTokenUpdates),
        (1200, nil), (3000, nil),
    ])
    func tokenUpdateRate(secondsLater: Int64, expected: APNsReason?) {
        var auth = f.connection()
        // ECDSA signatures are randomized: every `bearer` call is a new token string.
        let first = f.bearer(f.sandboxKey, kid: "KEYSANDBOX")
        #expect(auth.authenticate(authorization: first, now: t0) == nil)
        let now = t0.adding(seconds: secondsLater)
        let second = f.bearer(f.sandboxKey, kid: "KEYSANDBOX", iat: now)
        #expect(auth.authenticate(authorization: second, now: now) == expected)
        #expect(auth.tokenUpdates == (expected == nil ? 1 : 0))
        // The old token stays valid after a refused update.
        if expected != nil {
            #expect(auth.authenticate(authorization: first, now: now) == nil)
            #expect(auth.currentToken == String(first.dropFirst(7)))
        }
    }

    @Test func refreshEveryFiftyMinutesForHours() {
        var auth = f.connection()
        for step in Int64(0)..<10 {
            let now = t0.adding(seconds: step * 3000)
            let token = f.bearer(f.sandboxKey, kid: "KEYSANDBOX", iat: now)
            #expect(auth.authenticate(authorization: token, now: now) == nil)
            #expect(auth.authenticate(authorization: token, now: now.adding(seconds: 2999)) == nil)
        }
        #expect(auth.tokenUpdates == 9)
    }

    @Test func teamBoundOnFirstPush() {
        var auth = f.connection()
        #expect(auth.authenticate(authorization: f.bearer(f.sandboxKey, kid: "KEYSANDBOX"), now: t0) == nil)
        let later = t0.adding(seconds: 1500)
        #expect(
            auth.authenticate(
                authorization: f.bearer(f.otherTeamKey, kid: "KEYOTHERTM", team: "TEAM000002", iat: later), now: later)
                == .invalidProviderToken
        )
    }

    @Test func keyTypeRules() {
        let later = t0.adding(seconds: 1500)
        // Team-scoped first, then a topic-specific key: unrelated.
        var teamFirst = f.connection()
        #expect(teamFirst.authenticate(authorization: f.bearer(f.sandboxKey, kid: "KEYSANDBOX"), now: t0) == nil)
        #expect(
            teamFirst.authenticate(authorization: f.bearer(f.topicKey, kid: "KEYTOPIC01", iat: later), now: later)
                == .unrelatedKeyIdInToken
        )
        // Team-scoped first, then the team's key of the other environment.
        #expect(
            teamFirst.authenticate(authorization: f.bearer(f.productionKey, kid: "KEYPRODUCT", iat: later), now: later)
                == .badEnvironmentKeyIdInToken
        )
        // Topic key first, then its related key: fine; then an unrelated topic key.
        var topicFirst = f.connection()
        #expect(topicFirst.authenticate(authorization: f.bearer(f.topicKey, kid: "KEYTOPIC01"), now: t0) == nil)
        #expect(
            topicFirst.authenticate(
                authorization: f.bearer(f.relatedTopicKey, kid: "KEYTOPIC02", iat: later), now: later) == nil)
        #expect(
            topicFirst.authenticate(authorization: f.bearer(f.otherTopicKey, kid: "KEYTOPIC03", iat: later), now: later)
                == .unrelatedKeyIdInToken
        )
    }

    @Test func everyKeyUsedIsCheckedForRevocation() {
        var auth = f.connection()
        var revoked: Set<String> = []
        func authenticate(_ authorization: String, _ now: APNsTime) -> APNsReason? {
            auth.authenticate(authorization: authorization, now: now) { !revoked.contains($0) }
        }
        let first = f.bearer(f.topicKey, kid: "KEYTOPIC01")
        #expect(authenticate(first, t0) == nil)
        let later = t0.adding(seconds: 1500)
        let related = f.bearer(f.relatedTopicKey, kid: "KEYTOPIC02", iat: later)
        #expect(authenticate(related, later) == nil)
        #expect(auth.boundKeyID == "KEYTOPIC01")
        // The key in use now, not the first-bound one, is revoked: its pushes are refused.
        revoked = ["KEYTOPIC02"]
        #expect(authenticate(related, later.adding(seconds: 1)) == .invalidProviderToken)
        // A revoked key never becomes the connection's token, and costs no token update.
        var fresh = f.connection()
        #expect(fresh.authenticate(authorization: first, now: t0) { $0 != "KEYTOPIC01" } == .invalidProviderToken)
        #expect(!fresh.isAuthenticated)
        #expect(fresh.boundKeyID == nil)
        #expect(fresh.authenticate(authorization: first, now: t0) == nil)
        revoked = []
        #expect(authenticate(related, later.adding(seconds: 2)) == nil)
        #expect(auth.tokenUpdates == 1)
    }

    @Test func keyForTheOtherEndpoint() {
        var production = f.connection(.production)
        #expect(
            production.authenticate(authorization: f.bearer(f.sandboxKey, kid: "KEYSANDBOX"), now: t0)
                == .badEnvironmentKeyIdInToken
        )
        #expect(production.authenticate(authorization: f.bearer(f.productionKey, kid: "KEYPRODUCT"), now: t0) == nil)
    }

    @Test(arguments: [
        (String?.some("com.example.app"), APNsPushType?.some(.alert), APNsReason?.none),
        ("com.example.app.voip", .voip, nil),
        ("com.example.other.voip", nil, nil),
        ("com.example.app.voip", nil, nil),
        ("com.example.unknown", .alert, .topicDisallowed),
        ("com.example.unknown.voip", .voip, .topicDisallowed),
        ("com.example.unknown", nil, .topicDisallowed),
        ("com.example.app", .voip, .badTopic),
        (nil, .alert, .missingTopic),
    ])
    func topics(topic: String?, type: APNsPushType?, expected: APNsReason?) {
        var auth = f.connection()
        #expect(auth.authenticate(authorization: f.bearer(f.sandboxKey, kid: "KEYSANDBOX"), now: t0) == nil)
        var headers = APNsNotificationHeaders()
        headers.topic = topic
        headers.pushType = type
        #expect(auth.authorizeTopic(&headers) == expected)
    }

    @Test func topicKeyCoversOnlyItsTopics() {
        var auth = f.connection()
        #expect(auth.authenticate(authorization: f.bearer(f.topicKey, kid: "KEYTOPIC01"), now: t0) == nil)
        var headers = APNsNotificationHeaders()
        headers.pushType = .alert
        headers.topic = "com.example.other"
        #expect(auth.authorizeTopic(&headers) == .topicDisallowed)
        headers.topic = "com.example.app"
        #expect(auth.authorizeTopic(&headers) == nil)
    }

    @Test func topicsAddedAfterOpenNeedANewConnection() {
        var registry = f.registry
        let auth0 = ProviderConnectionAuth(serverEnvironment: .sandbox, keys: registry, certificate: nil)
        registry.insert(
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEYSANDBOX", publicKey: f.sandboxKey.publicKey, environments: [.sandbox],
                scope: .team(bundleIDs: ["com.example.new"]))
        )
        var old = auth0
        var new = ProviderConnectionAuth(serverEnvironment: .sandbox, keys: registry, certificate: nil)
        #expect(old.authenticate(authorization: f.bearer(f.sandboxKey, kid: "KEYSANDBOX"), now: t0) == nil)
        #expect(new.authenticate(authorization: f.bearer(f.sandboxKey, kid: "KEYSANDBOX"), now: t0) == nil)
        var headers = APNsNotificationHeaders()
        headers.topic = "com.example.new"
        headers.pushType = .alert
        #expect(old.authorizeTopic(&headers) == .topicDisallowed)
        #expect(new.authorizeTopic(&headers) == nil)
    }
}

@Suite("Provider connection auth: certificates")
struct ProviderCertificateConnectionTests {
    static let t0 = AuthFixture.t0
    static let multi = ProviderCertificate(
        subjectUID: "com.example.app",
        topics: ["com.example.app", "com.example.app.voip", "com.example.app.complication"],
        environments: [.sandbox]
    )

    static func connection(_ certificate: ProviderCertificate, _ environment: APNsEnvironment = .sandbox)
        -> ProviderConnectionAuth
    {
        ProviderConnectionAuth(serverEnvironment: environment, keys: APNsKeyRegistry(), certificate: certificate)
    }

    @Test(arguments: [
        (ProviderCertificate.Verification.ok, APNsEnvironment.sandbox, APNsReason?.none),
        (.ok, .production, .badCertificateEnvironment),
        (.expired, .sandbox, .badCertificate),
        (.unknownCA, .sandbox, .badCertificate),
        (.notYetValid, .sandbox, .badCertificate),
        (.failed("x"), .sandbox, .badCertificate),
    ])
    func credentials(
        verification: ProviderCertificate.Verification, environment: APNsEnvironment, expected: APNsReason?
    ) {
        var certificate = Self.multi
        certificate.verification = verification
        var auth = Self.connection(certificate, environment)
        #expect(auth.isAuthenticated)
        #expect(auth.maxConcurrentStreams(configured: 1000) == 1000)
        // The authorization header is ignored on certificate connections.
        #expect(auth.authenticate(authorization: "bearer junk", now: Self.t0) == expected)
    }

    @Test(arguments: [
        (String?.some("com.example.app"), APNsPushType?.some(.alert), APNsReason?.none),
        ("com.example.app.voip", .voip, nil),
        ("com.example.app.complication", .complication, nil),
        ("com.example.app.push-type.widgets", .widgets, .topicDisallowed),
        ("com.example.other", .alert, .topicDisallowed),
        ("com.example.app.location-query", .location, .topicDisallowed),
        (nil, .alert, .missingTopic),
    ])
    func topics(topic: String?, type: APNsPushType?, expected: APNsReason?) {
        let auth = Self.connection(Self.multi)
        var headers = APNsNotificationHeaders()
        headers.topic = topic
        headers.pushType = type
        #expect(auth.authorizeTopic(&headers) == expected)
    }

    @Test(arguments: [
        ("com.example.app", APNsPushType.alert, ["com.example.app"], APNsReason?.none),
        ("com.example.app.voip", .voip, ["com.example.app"], nil),
        ("com.example.app.complication", .complication, ["com.example.app"], nil),
        ("com.example.app", .alert, ["com.example.app.voip"], .topicDisallowed),
        ("com.example.app.voip", .voip, ["com.example.app.voip"], nil),
        ("com.example.app.complication", .complication, ["com.example.app.voip"], .topicDisallowed),
        ("com.example.app", .alert, ["com.example.other"], .topicDisallowed),
    ])
    func serverLimitsWhatCertificatesGrant(
        topic: String, type: APNsPushType, trusted: [String], expected: APNsReason?
    ) {
        let auth = ProviderConnectionAuth(
            serverEnvironment: .sandbox, keys: APNsKeyRegistry(), certificate: Self.multi,
            certificateBundleIDs: Set(trusted))
        var headers = APNsNotificationHeaders()
        headers.topic = topic
        headers.pushType = type
        #expect(auth.authorizeTopic(&headers) == expected)
        let none = ProviderConnectionAuth(
            serverEnvironment: .sandbox, keys: APNsKeyRegistry(), certificate: Self.multi, certificateBundleIDs: [])
        #expect(none.authorizeTopic(&headers) == .topicDisallowed)
        // A single-topic certificate's default topic is checked too.
        let single = ProviderConnectionAuth(
            serverEnvironment: .sandbox, keys: APNsKeyRegistry(),
            certificate: ProviderCertificate(
                subjectUID: "com.example.one", topics: ["com.example.one"], environments: []),
            certificateBundleIDs: ["com.example.app"])
        var defaulted = APNsNotificationHeaders()
        #expect(single.authorizeTopic(&defaulted) == .topicDisallowed)
    }

    @Test func singleTopicCertificateDefaultsTheTopic() {
        let auth = Self.connection(
            ProviderCertificate(subjectUID: "com.example.one", topics: ["com.example.one"], environments: [.sandbox]))
        var headers = APNsNotificationHeaders()
        #expect(auth.authorizeTopic(&headers) == nil)
        #expect(headers.topic == "com.example.one")
    }
}

extension String {
    fileprivate func replacingPrefix(_ prefix: String) -> String { prefix + dropFirst(prefix.count) }
}

@Suite("Provider connection auth: hostile claims")
struct ProviderHostileClaimsTests {
    @Test(arguments: [
        (Int64.min + 1, APNsReason.expiredProviderToken), (-Int64.max, .expiredProviderToken),
        (0, .expiredProviderToken),
        (Int64.max, .invalidProviderToken),
    ])
    func extremeIssuedAtNeverTraps(iat: Int64, expected: APNsReason) throws {
        let key = P256.Signing.PrivateKey()
        let registry = APNsKeyRegistry([APNsSigningKey(teamID: "T", keyID: "K", publicKey: key.publicKey)])
        var auth = ProviderConnectionAuth(serverEnvironment: .sandbox, keys: registry, certificate: nil)
        let jwt = try ProviderToken(keyID: "K", teamID: "T", issuedAt: iat).signed(with: key)
        #expect(auth.authenticate(authorization: "bearer " + jwt, now: AuthFixture.t0) == expected)
        // Extreme clocks do not trap either.
        _ = auth.authenticate(authorization: "bearer " + jwt, now: APNsTime(milliseconds: .min))
        _ = auth.authenticate(authorization: "bearer " + jwt, now: APNsTime(milliseconds: .max))
    }

    @Test func timeSeconds() {
        #expect(APNsTime(milliseconds: 1999).seconds == 1)
        #expect(APNsTime(milliseconds: -1).seconds == -1)
        #expect(APNsTime(milliseconds: -1000).seconds == -1)
        #expect(APNsTime(milliseconds: .min).seconds == Int64.min / 1000 - 1)
    }
}

@Suite("Provider connection auth: iat in the forms clients sign")
struct ProviderIssuedAtFormTests {
    /// A token with `claims` written as given (other clients' encoders), signed with `key`.
    static func jwt(claims: String, key: P256.Signing.PrivateKey) throws -> String {
        let input =
            Base64URL.encode(Array(#"{"alg":"ES256","kid":"K"}"#.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)).rawRepresentation)
    }

    /// Now is `AuthFixture.t0` (1 800 000 000 s); tokens live an hour.
    @Test(arguments: [
        (#"{"iss":"T","iat":1800000000}"#, APNsReason?.none),
        (#"{"iss":"T","iat":1799999999.812345}"#, nil),  // PyJWT: time.time()
        (#"{"iss":"T","iat":1.7999999998e9}"#, nil),
        (#"{"iss":"T","iat":"1800000000"}"#, nil),  // kalyke-apns
        (#"{"iss":"T","iat":1799992799.5}"#, .expiredProviderToken),  // over an hour old
        (#"{"iss":"T","iat":"1800000000.5"}"#, .invalidProviderToken),
        (#"{"iss":"T","iat":true}"#, .invalidProviderToken),
        (#"{"iss":"T","iat":null}"#, .invalidProviderToken),
        (#"{"iss":"T","iat":1e300}"#, .invalidProviderToken),
        (#"{"iss":"T"}"#, .invalidProviderToken),
    ])
    func issuedAtForms(claims: String, expected: APNsReason?) throws {
        let key = P256.Signing.PrivateKey()
        let registry = APNsKeyRegistry([APNsSigningKey(teamID: "T", keyID: "K", publicKey: key.publicKey)])
        var auth = ProviderConnectionAuth(serverEnvironment: .sandbox, keys: registry, certificate: nil)
        let token = try Self.jwt(claims: claims, key: key)
        #expect(auth.authenticate(authorization: "bearer " + token, now: AuthFixture.t0) == expected)
    }
}
