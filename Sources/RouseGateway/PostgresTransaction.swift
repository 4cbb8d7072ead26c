import RousePostgres

/// One PostgreSQL transaction (or read-only snapshot) behind `GatewayStoreTransaction`: the SQLite store's
/// statements, in PostgreSQL's dialect, each prepared once per connection.
struct PostgresTransaction: GatewayStoreTransaction {
    let connection: PostgresConnection
    /// Seals the node messages this transaction sends.
    let seal: NodeMessageSeal

    /// Runs `sql` with `parameters` on the transaction's connection (prepared once per connection); libpq's error
    /// as the gateway's.
    @discardableResult
    func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(GatewayError) -> PostgresResult {
        try GatewayError.wrapping(try connection.query(sql, parameters))
    }

    private static let pushColumns =
        "seq, device_id, token, topic, push_type, priority, apns_id, collapse_id, expiration, expires_at, "
        + "received_at, payload, device_seq"

    private static func pushes(_ result: PostgresResult) -> [StoredPush] {
        (0..<result.count).map { row in
            var push = StoredPush(
                id: result.int64(row, 0) ?? 0, deviceID: result.string(row, 1) ?? "",
                token: result.string(row, 2) ?? "", topic: result.string(row, 3) ?? "",
                pushType: result.string(row, 4), priority: result.int(row, 5) ?? 10,
                apnsID: result.string(row, 6) ?? "", collapseID: result.string(row, 7),
                expiration: result.int64(row, 8), expiresAt: result.int64(row, 9) ?? 0,
                receivedAt: result.int64(row, 10) ?? 0, payload: result.bytes(row, 11) ?? [])
            push.deviceSeq = result.int64(row, 12)
            return push
        }
    }

    private static func ids(_ result: PostgresResult) -> [Int64] {
        (0..<result.count).compactMap { result.int64($0, 0) }
    }

    func insertPush(_ push: StoredPush) throws -> Int64 {
        let result = try query(
            """
            INSERT INTO pushes(device_id, token, topic, push_type, priority, apns_id, collapse_id, expiration,
                expires_at, received_at, is_voip, payload, device_seq)
                VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)
            RETURNING seq
            """,
            [
                .init(push.deviceID), .init(push.token), .init(push.topic), .init(push.pushType), .init(push.priority),
                .init(push.apnsID), .init(push.collapseID), .init(push.expiration), .init(push.expiresAt),
                .init(push.receivedAt), .init(push.isVoIP), .bytes(push.payload), .init(push.deviceSeq),
            ])
        guard let seq = result.int64(0, 0) else { throw GatewayError.storage("postgres: INSERT returned no seq") }
        return seq
    }

    func deletePending(deviceID: String, topic: String, collapseID: String) throws -> [Int64] {
        Self.ids(
            try query(
                "DELETE FROM pushes WHERE device_id = $1 AND topic = $2 AND collapse_id = $3 RETURNING seq",
                [.init(deviceID), .init(topic), .init(collapseID)]))
    }

    func deletePendingBackground(deviceID: String, topic: String) throws -> [Int64] {
        Self.ids(
            try query(
                "DELETE FROM pushes WHERE device_id = $1 AND topic = $2 AND push_type = 'background' RETURNING seq",
                [.init(deviceID), .init(topic)]))
    }

    func pending(deviceID: String, excluding: Set<Int64>, limit: Int, now: Int64, webPushMinimum: Int) throws
        -> [StoredPush]
    {
        guard limit > 0 else { return [] }
        return Self.pushes(
            try query(
                "SELECT \(Self.pushColumns) FROM pushes WHERE device_id = $1 AND expires_at > $2 "
                    + "AND (push_type IS DISTINCT FROM 'webpush' OR priority >= $5) "
                    + "AND seq <> ALL($3::bigint[]) ORDER BY is_voip DESC, device_seq NULLS FIRST, seq LIMIT $4",
                [
                    .init(deviceID), .init(now), .init(array: excluding.sorted()), .init(limit),
                    .init(webPushMinimum),
                ]))
    }

    func acknowledge(deviceID: String, ids: [Int64]) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try query(
            "DELETE FROM pushes WHERE device_id = $1 AND seq = ANY($2::bigint[])", [.init(deviceID), .init(array: ids)]
        ).affected
    }

    func deleteExpired(now: Int64) throws -> Int {
        try query("DELETE FROM pushes WHERE expires_at <= $1", [.init(now)]).affected
    }

    func pendingList(deviceID: String?, limit: Int) throws -> [StoredPush] {
        if let deviceID {
            return Self.pushes(
                try query(
                    "SELECT \(Self.pushColumns) FROM pushes WHERE device_id = $1 ORDER BY seq LIMIT $2",
                    [.init(deviceID), .init(limit)]))
        }
        return Self.pushes(
            try query("SELECT \(Self.pushColumns) FROM pushes ORDER BY seq LIMIT $1", [.init(limit)]))
    }

    func pendingCounts() throws -> [String: Int] {
        Self.counts(try query("SELECT device_id, pushes FROM device_backlog"))
    }

    func pendingCounts(deviceIDs: [String]) throws -> [String: Int] {
        Self.counts(
            try query(
                "SELECT device_id, pushes FROM device_backlog WHERE device_id = ANY($1::text[])",
                [.init(textArray: deviceIDs)]))
    }

    private static func counts(_ result: PostgresResult) -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in 0..<result.count {
            if let id = result.string(row, 0) { counts[id] = result.int(row, 1) ?? 0 }
        }
        return counts
    }

    func pendingTotal() throws -> Int {
        try query("SELECT coalesce(sum(pushes), 0) FROM device_backlog").int(0, 0) ?? 0
    }

    func trimBacklog(_ owner: BacklogOwner, pushes maxPushes: Int, bytes maxBytes: Int) throws -> [(
        id: Int64, pushType: String?
    )] {
        let totals =
            switch owner {
            case .token(let token):
                try query("SELECT pushes, bytes FROM token_backlog WHERE token = $1", [.init(token)])
            case .device(let deviceID):
                try query(
                    "SELECT pushes, bytes FROM device_backlog WHERE device_id = $1", [.init(deviceID)])
            }
        guard totals.count > 0 else { return [] }
        var pushes = totals.int(0, 0) ?? 0
        var bytes = totals.int(0, 1) ?? 0
        var dropped: [(id: Int64, pushType: String?)] = []
        var after: Int64 = 0
        while pushes > maxPushes || bytes > maxBytes {
            let page = try oldest(owner, after: after, limit: max(pushes - maxPushes, 16))
            if page.isEmpty { break }
            for row in page where pushes > maxPushes || bytes > maxBytes {
                dropped.append((row.seq, row.pushType))
                after = row.seq
                pushes -= 1
                bytes -= row.size
            }
        }
        if !dropped.isEmpty {
            try query("DELETE FROM pushes WHERE seq = ANY($1::bigint[])", [.init(array: dropped.map(\.id))])
        }
        return dropped
    }

    /// The owner's oldest pending pushes after `seq` (as the SQLite store: by index, VoIP and others merged).
    private func oldest(_ owner: BacklogOwner, after seq: Int64, limit: Int) throws -> [(
        seq: Int64, pushType: String?, size: Int
    )] {
        let columns = "seq, push_type, octet_length(payload)"
        var results: [PostgresResult] = []
        switch owner {
        case .token(let token):
            results.append(
                try query(
                    "SELECT \(columns) FROM pushes WHERE token = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                    [.init(token), .init(seq), .init(limit)]))
        case .device(let deviceID):
            for isVoIP in [false, true] {
                results.append(
                    try query(
                        "SELECT \(columns) FROM pushes WHERE device_id = $1 AND is_voip = $2 AND seq > $3 "
                            + "ORDER BY seq LIMIT $4",
                        [.init(deviceID), .init(isVoIP), .init(seq), .init(limit)]))
            }
        }
        var rows: [(seq: Int64, pushType: String?, size: Int)] = []
        for result in results {
            for row in 0..<result.count {
                rows.append((result.int64(row, 0) ?? 0, result.string(row, 1), result.int(row, 2) ?? 0))
            }
        }
        rows.sort { $0.seq < $1.seq }
        return Array(rows.prefix(limit))
    }

    // MARK: Devices

    private static let deviceColumns = "id, authentication, credential_hash, created_at, revoked_at"

    private static func devices(_ result: PostgresResult) -> [DeviceRecord] {
        (0..<result.count).map { row in
            DeviceRecord(
                id: result.string(row, 0) ?? "",
                authentication: DeviceRecord.Authentication(rawValue: result.string(row, 1) ?? "") ?? .secret,
                credentialHash: result.bytes(row, 2), createdAt: result.int64(row, 3) ?? 0,
                revokedAt: result.int64(row, 4))
        }
    }

    func device(_ id: String) throws -> DeviceRecord? {
        Self.devices(try query("SELECT \(Self.deviceColumns) FROM devices WHERE id = $1", [.init(id)]))
            .first
    }

    func insertDevice(_ device: DeviceRecord) throws {
        try query(
            "INSERT INTO devices(id, authentication, credential_hash, created_at, revoked_at) VALUES ($1,$2,$3,$4,$5)",
            [
                .init(device.id), .init(device.authentication.rawValue), .init(device.credentialHash),
                .init(device.createdAt), .init(device.revokedAt),
            ])
    }

    func revokeDevice(_ id: String, at time: Int64) throws -> Bool {
        let changed = try query(
            "UPDATE devices SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING owner_node",
            [.init(time), .init(id)])
        guard changed.count > 0 else { return false }
        // Whoever revokes (a node, the CLI), the node holding the channel closes it when this commits.
        if let owner = changed.string(0, 0) { try notify(node: owner, [.revoked(deviceID: id)], now: time) }
        try query(
            "UPDATE tokens SET revoked_at = $1 WHERE device_id = $2 AND revoked_at IS NULL", [.init(time), .init(id)])
        try query(
            "UPDATE webpush_subscriptions SET revoked_at = $1 WHERE device_id = $2 AND revoked_at IS NULL",
            [.init(time), .init(id)])
        try query("DELETE FROM pushes WHERE device_id = $1", [.init(id)])
        return true
    }

    func devices() throws -> [DeviceRecord] {
        Self.devices(try query("SELECT \(Self.deviceColumns) FROM devices ORDER BY id"))
    }

    func devices(after: String?, limit: Int) throws -> [DeviceRecord] {
        Self.devices(
            try query(
                "SELECT \(Self.deviceColumns) FROM devices WHERE id > $1 ORDER BY id LIMIT $2",
                [.init(after ?? ""), .init(limit)]))
    }

    func devicesRevoked(since time: Int64) throws -> [String] {
        let result = try query("SELECT id FROM devices WHERE revoked_at >= $1", [.init(time)])
        return (0..<result.count).compactMap { result.string($0, 0) }
    }

    func insertEnrollmentSecret(hash: [UInt8], createdAt: Int64, expiresAt: Int64?) throws {
        try query(
            "INSERT INTO enrollment_secrets(hash, created_at, expires_at) VALUES ($1,$2,$3)",
            [.bytes(hash), .init(createdAt), .init(expiresAt)])
    }

    func consumeEnrollmentSecret(hash: [UInt8], deviceID: String, now: Int64) throws -> Bool {
        try query(
            """
            UPDATE enrollment_secrets SET used_at = $1, device_id = $2
            WHERE hash = $3 AND used_at IS NULL AND (expires_at IS NULL OR expires_at > $1)
            """,
            [.init(now), .init(deviceID), .bytes(hash)]
        ).affected > 0
    }

    // MARK: Tokens

    private static let tokenColumns = "token, device_id, topic, created_at, revoked_at"

    private static func tokens(_ result: PostgresResult) -> [TokenRecord] {
        (0..<result.count).map { row in
            TokenRecord(
                token: result.string(row, 0) ?? "", deviceID: result.string(row, 1) ?? "",
                topic: result.string(row, 2) ?? "", createdAt: result.int64(row, 3) ?? 0,
                revokedAt: result.int64(row, 4))
        }
    }

    func token(_ token: String) throws -> TokenRecord? {
        Self.tokens(try query("SELECT \(Self.tokenColumns) FROM tokens WHERE token = $1", [.init(token)]))
            .first
    }

    func insertToken(_ token: TokenRecord) throws {
        try query(
            "INSERT INTO tokens(token, device_id, topic, created_at, revoked_at) VALUES ($1,$2,$3,$4,$5)",
            [
                .init(token.token), .init(token.deviceID), .init(token.topic), .init(token.createdAt),
                .init(token.revokedAt),
            ]
        )
    }

    func tokens(deviceID: String?) throws -> [TokenRecord] {
        if let deviceID {
            return Self.tokens(
                try query(
                    "SELECT \(Self.tokenColumns) FROM tokens WHERE device_id = $1 ORDER BY created_at, token",
                    [.init(deviceID)]))
        }
        return Self.tokens(try query("SELECT \(Self.tokenColumns) FROM tokens ORDER BY created_at, token"))
    }

    func tokens(offset: Int, limit: Int) throws -> [TokenRecord] {
        Self.tokens(
            try query(
                "SELECT \(Self.tokenColumns) FROM tokens ORDER BY token LIMIT $1 OFFSET $2",
                [.init(limit), .init(offset)]))
    }

    func revokeToken(_ token: String, deviceID: String, at time: Int64) throws -> [Int64]? {
        let changed = try query(
            "UPDATE tokens SET revoked_at = $1 WHERE token = $2 AND device_id = $3 AND revoked_at IS NULL",
            [.init(time), .init(token), .init(deviceID)]
        ).affected
        guard changed > 0 else { return nil }
        return Self.ids(try query("DELETE FROM pushes WHERE token = $1 RETURNING seq", [.init(token)]))
    }

    // MARK: Handler reports

    func replaceHandlerReports(deviceID: String, _ reports: [HandlerReport]) throws {
        try query("DELETE FROM handler_reports WHERE device_id = $1", [.init(deviceID)])
        for report in reports {
            try query(
                """
                INSERT INTO handler_reports(device_id, topic, strikes, voip_blocked, reported_at)
                VALUES ($1,$2,$3,$4,$5)
                """,
                [
                    .init(deviceID), .init(report.topic), .init(report.strikes), .init(report.voipBlocked),
                    .init(report.reportedAt),
                ])
        }
    }

    func handlerReports(deviceID: String?) throws -> [HandlerReport] {
        let columns = "device_id, topic, strikes, voip_blocked, reported_at"
        let result =
            if let deviceID {
                try query(
                    "SELECT \(columns) FROM handler_reports WHERE device_id = $1 ORDER BY topic", [.init(deviceID)])
            } else {
                try query("SELECT \(columns) FROM handler_reports ORDER BY device_id, topic")
            }
        return Self.handlerReports(result)
    }

    func handlerReports(deviceIDs: [String]) throws -> [HandlerReport] {
        Self.handlerReports(
            try query(
                "SELECT device_id, topic, strikes, voip_blocked, reported_at FROM handler_reports "
                    + "WHERE device_id = ANY($1::text[]) ORDER BY device_id, topic", [.init(textArray: deviceIDs)]))
    }

    private static func handlerReports(_ result: PostgresResult) -> [HandlerReport] {
        (0..<result.count).map { row in
            HandlerReport(
                deviceID: result.string(row, 0) ?? "", topic: result.string(row, 1) ?? "",
                strikes: result.int(row, 2) ?? 0, voipBlocked: result.bool(row, 3),
                reportedAt: result.int64(row, 4) ?? 0)
        }
    }

    // MARK: Provider keys

    func providerKeys(includeRevoked: Bool) throws -> [ProviderKeyRecord] {
        let columns = "key_id, team_id, public_key_pem, topics, created_at, revoked_at"
        let result = try query(
            includeRevoked
                ? "SELECT \(columns) FROM provider_keys ORDER BY key_id"
                : "SELECT \(columns) FROM provider_keys WHERE revoked_at IS NULL ORDER BY key_id")
        return (0..<result.count).map { row in
            ProviderKeyRecord(
                keyID: result.string(row, 0) ?? "", teamID: result.string(row, 1) ?? "",
                publicKeyPEM: result.string(row, 2) ?? "",
                topics: result.string(row, 3).map { $0.split(separator: ",").map(String.init) },
                createdAt: result.int64(row, 4) ?? 0, revokedAt: result.int64(row, 5))
        }
    }

    func upsertProviderKey(_ key: ProviderKeyRecord) throws {
        try query(
            """
            INSERT INTO provider_keys(key_id, team_id, public_key_pem, topics, created_at, revoked_at)
            VALUES ($1,$2,$3,$4,$5,NULL)
            ON CONFLICT(key_id) DO UPDATE SET team_id = excluded.team_id,
                public_key_pem = excluded.public_key_pem, topics = excluded.topics
            """,
            [
                .init(key.keyID), .init(key.teamID), .init(key.publicKeyPEM), .init(key.topics?.joined(separator: ",")),
                .init(key.createdAt),
            ])
    }

    func revokeProviderKey(_ keyID: String, at time: Int64) throws -> Bool {
        try query(
            "UPDATE provider_keys SET revoked_at = $1 WHERE key_id = $2 AND revoked_at IS NULL",
            [.init(time), .init(keyID)]
        ).affected > 0
    }

    // MARK: Several nodes

    func nextDeviceSequence(deviceID: String) throws -> DeviceSequence? {
        let result = try query(
            "UPDATE devices SET next_seq = next_seq + 1 WHERE id = $1 RETURNING next_seq, owner_node, owner_channel",
            [.init(deviceID)])
        guard let seq = result.int64(0, 0) else {
            throw GatewayError.storage("postgres: no device '\(deviceID)' for a sequence number")
        }
        return DeviceSequence(seq: seq, owner: Self.owner(result, row: 0, column: 1))
    }

    func claimChannel(deviceID: String, owner: ChannelOwner) throws -> (previous: ChannelOwner?, lastSeq: Int64)? {
        let result = try query(
            "SELECT next_seq, owner_node, owner_channel FROM devices WHERE id = $1 FOR UPDATE", [.init(deviceID)])
        guard let lastSeq = result.int64(0, 0) else {
            throw GatewayError.storage("postgres: no device '\(deviceID)' to claim")
        }
        try query(
            "UPDATE devices SET owner_node = $2, owner_channel = $3 WHERE id = $1",
            [.init(deviceID), .init(owner.node), .init(String(owner.channelID))])
        return (Self.owner(result, row: 0, column: 1), lastSeq)
    }

    func releaseChannel(deviceID: String, owner: ChannelOwner) throws {
        try query(
            "UPDATE devices SET owner_node = NULL, owner_channel = NULL "
                + "WHERE id = $1 AND owner_node = $2 AND owner_channel = $3",
            [.init(deviceID), .init(owner.node), .init(String(owner.channelID))])
    }

    func notify(node: String, _ messages: [NodeMessage], now: Int64) throws {
        for payload in NodeMessage.payloads(messages) {
            let sealed = try seal.seal(payload, to: node, now: now)
            try query(
                "SELECT pg_notify($1, $2)", [.init(PostgresNotifications.channel(node)), .init(sealed)])
        }
    }

    func renewNode(_ node: String, now: Int64, leaseUntil: Int64, fresh: Bool) throws {
        if fresh {
            try query(
                "UPDATE devices SET owner_node = NULL, owner_channel = NULL WHERE owner_node = $1", [.init(node)])
            try query(
                """
                INSERT INTO gateway_nodes(id, started_at, lease_expires_at) VALUES ($1, $2, $3)
                ON CONFLICT(id) DO UPDATE SET started_at = excluded.started_at,
                    lease_expires_at = excluded.lease_expires_at
                """, [.init(node), .init(now), .init(leaseUntil)])
        } else {
            try query(
                """
                INSERT INTO gateway_nodes(id, started_at, lease_expires_at) VALUES ($1, $2, $3)
                ON CONFLICT(id) DO UPDATE SET lease_expires_at = excluded.lease_expires_at
                """, [.init(node), .init(now), .init(leaseUntil)])
        }
    }

    func removeNode(_ node: String) throws {
        try query(
            "UPDATE devices SET owner_node = NULL, owner_channel = NULL WHERE owner_node = $1", [.init(node)])
        try query("DELETE FROM gateway_nodes WHERE id = $1", [.init(node)])
    }

    func nodes() throws -> [GatewayNodeRecord] {
        let result = try query(
            """
            SELECT n.id, n.started_at, n.lease_expires_at,
                (SELECT count(*) FROM devices d WHERE d.owner_node = n.id)
            FROM gateway_nodes n ORDER BY n.id
            """)
        return (0..<result.count).map { row in
            GatewayNodeRecord(
                id: result.string(row, 0) ?? "", startedAt: result.int64(row, 1) ?? 0,
                leaseExpiresAt: result.int64(row, 2) ?? 0, channels: result.int(row, 3) ?? 0)
        }
    }

    private static func owner(_ result: PostgresResult, row: Int, column: Int) -> ChannelOwner? {
        guard let node = result.string(row, column), let channel = result.int64(row, column + 1) else { return nil }
        return ChannelOwner(node: node, channelID: UInt64(channel))
    }

    func unrevokeProviderKey(_ keyID: String) throws -> Bool {
        try query(
            "UPDATE provider_keys SET revoked_at = NULL WHERE key_id = $1 AND revoked_at IS NOT NULL", [.init(keyID)]
        ).affected > 0
    }
}
