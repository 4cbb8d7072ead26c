import RouseAPNs
import RouseSender
import Testing

@Suite("Provider token refresh rules (manual clock)")
struct TokenRefreshTests {
    static let t0 = APNsTime(seconds: 1_800_000_000)
    static func signer(_ iat: Int64) -> String { "jwt-\(iat)" }

    @Test func oneTokenSharedByConnections() {
        var state = ProviderTokenState()
        let a = state.token(for: nil, now: Self.t0, signer: Self.signer)
        let b = state.token(for: nil, now: Self.t0.adding(seconds: 60), signer: Self.signer)
        #expect(a.jwt == b.jwt)
        #expect(state.mints == 1)
    }

    @Test func refreshedAtFiftyMinutesNeverMoreThanOncePerTwentyMinutesPerConnection() {
        var state = ProviderTokenState()
        var connection = state.token(for: nil, now: Self.t0, signer: Self.signer)
        var switches: [Int64] = []
        // Use the connection every 10 seconds for 5 hours.
        for step in 1...(5 * 360) {
            let now = Self.t0.adding(seconds: Int64(step) * 10)
            let next = state.token(for: connection, now: now, signer: Self.signer)
            if next.generation != connection.generation { switches.append(now.seconds) }
            connection = next
            let age = now.seconds - connection.issuedAt.seconds
            #expect(age < 3600, "token older than an hour at \(now.seconds - Self.t0.seconds) s")
        }
        #expect(!switches.isEmpty)
        for (a, b) in zip(switches, switches.dropFirst()) { #expect(b - a >= 20 * 60) }
        let firstSwitch = (switches.first ?? 0) - Self.t0.seconds
        #expect(firstSwitch == 3000)
    }

    @Test func lateConnectionAdoptsFreshEnoughToken() {
        var state = ProviderTokenState()
        let first = state.token(for: nil, now: Self.t0, signer: Self.signer)
        // 45 minutes later a new connection: the shared token is too old to be adopted (it could not be
        // switched within 20 minutes before it expires), so a new one is minted.
        var late = state.token(for: nil, now: Self.t0.adding(seconds: 45 * 60), signer: Self.signer)
        #expect(late.generation == first.generation + 1)
        // The late connection keeps its token for at least 20 minutes and never holds an expired one.
        for minute in 46...200 {
            let now = Self.t0.adding(seconds: Int64(minute) * 60)
            let next = state.token(for: late, now: now, signer: Self.signer)
            if next.generation != late.generation { #expect(now.seconds - late.adoptedAt.seconds >= 20 * 60) }
            late = next
            #expect(now.seconds - late.issuedAt.seconds < 3600)
        }
    }

    @Test func expiredBurstMintsOnce() {
        var state = ProviderTokenState()
        let token = state.token(for: nil, now: Self.t0, signer: Self.signer)
        for _ in 0..<100 {
            state.expired(generation: token.generation, now: Self.t0.adding(seconds: 5), signer: Self.signer)
        }
        #expect(state.mints == 2)
    }

    @Test(arguments: [0, 10 * 60, 50 * 60, 120 * 60])
    func refreshAgeClamped(_ age: Int64) {
        let policy = TokenRefreshPolicy(refreshAge: age)
        #expect((20 * 60...55 * 60).contains(policy.refreshAge))
    }
}
