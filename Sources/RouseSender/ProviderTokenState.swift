import RouseAPNs

/// The refresh rules for provider tokens, as plain numbers (seconds).
///
/// Apple: "Refresh your token no more than once every 20 minutes and no less than once every 60 minutes …
/// APNs report an error if you use a new token more than once every 20 minutes on the same connection."
public struct TokenRefreshPolicy: Sendable, Hashable {
    /// The shared token is replaced at this age (clamped to 20…55 minutes so that a connection that
    /// adopted it can always switch before it is an hour old). Default 50 minutes.
    public var refreshAge: Int64
    /// A connection never changes its token more often than this (20 minutes).
    public let minimumSwitchInterval: Int64 = 20 * 60
    /// A connection adopts a token only if it is younger than this, so that it can switch (20 minutes
    /// later at the earliest) before the token expires at 60 minutes.
    public let maximumAdoptionAge: Int64 = 30 * 60

    /// A policy; `refreshAge` in seconds.
    public init(refreshAge: Int64 = 50 * 60) {
        self.refreshAge = min(max(refreshAge, 20 * 60), 55 * 60)
    }
}

/// The token a connection uses.
public struct ConnectionToken: Sendable, Hashable {
    /// The signed JWT.
    public var jwt: String
    /// Which mint it came from (increases by one per mint).
    public var generation: Int
    /// Its `iat`.
    public var issuedAt: APNsTime
    /// When this connection started using it.
    public var adoptedAt: APNsTime
}

/// One shared provider token per key, and the per-connection switching rule. A value type: callers pass
/// the wall-clock time and a signer; tests drive it on a manual clock.
public struct ProviderTokenState: Sendable {
    /// The rules.
    public let policy: TokenRefreshPolicy
    /// The current shared token, if one was minted.
    public private(set) var current: (jwt: String, generation: Int, issuedAt: APNsTime)?
    /// How many tokens were minted.
    public private(set) var mints = 0

    /// Starts without a token (the first use mints one).
    public init(policy: TokenRefreshPolicy = TokenRefreshPolicy()) {
        self.policy = policy
    }

    private mutating func mint(now: APNsTime, signer: (Int64) -> String) {
        let generation = (current?.generation ?? 0) + 1
        let issuedAt = APNsTime(seconds: now.seconds)
        current = (signer(issuedAt.seconds), generation, issuedAt)
        mints += 1
    }

    private func age(_ issuedAt: APNsTime, now: APNsTime) -> Int64 { now.seconds - issuedAt.seconds }

    /// Age of the shared token in seconds, if there is one.
    public func currentAge(now: APNsTime) -> Int64? { current.map { age($0.issuedAt, now: now) } }

    /// The token to put on the next request of a connection that currently uses `token` (nil: its first
    /// request). Mints when the shared token is too old to be adopted or due for refresh.
    public mutating func token(
        for token: ConnectionToken?, now: APNsTime, signer: (Int64) -> String
    ) -> ConnectionToken {
        if let token {
            let held = now.seconds - token.adoptedAt.seconds
            let due = age(token.issuedAt, now: now) >= policy.refreshAge
            let newer = (current?.generation ?? 0) > token.generation
            guard (due || newer), held >= policy.minimumSwitchInterval else { return token }
            if currentAge(now: now).map({ $0 >= policy.refreshAge }) ?? true { mint(now: now, signer: signer) }
            guard let current, current.generation != token.generation else { return token }
            return ConnectionToken(
                jwt: current.jwt, generation: current.generation, issuedAt: current.issuedAt, adoptedAt: now)
        }
        if currentAge(now: now).map({ $0 >= policy.maximumAdoptionAge }) ?? true { mint(now: now, signer: signer) }
        guard let c = current else { preconditionFailure("mint sets the current token") }
        return ConnectionToken(jwt: c.jwt, generation: c.generation, issuedAt: c.issuedAt, adoptedAt: now)
    }

    /// APNs answered `ExpiredProviderToken` to a request signed with `generation`: mint a new token unless
    /// one newer than it exists already (so a burst of rejections mints once).
    public mutating func expired(generation: Int, now: APNsTime, signer: (Int64) -> String) {
        if let current, current.generation > generation { return }
        mint(now: now, signer: signer)
    }

    /// Whether a connection holding `token` may switch to a newer token now.
    public func maySwitch(_ token: ConnectionToken, now: APNsTime) -> Bool {
        now.seconds - token.adoptedAt.seconds >= policy.minimumSwitchInterval
    }
}
