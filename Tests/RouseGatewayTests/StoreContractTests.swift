import Foundation
import RouseGateway
import RouseSQLite
import RouseTestSupport
import Testing

/// The `GatewayStore` contract, run against SQLite and a real PostgreSQL 15, and what only PostgreSQL has
/// (connection settings, outages).
@Suite("Gateway store contract, SQLite and PostgreSQL", .timeLimit(.minutes(5)), .stopsWhatItStarts)
struct StoreContractTests {
    static func push(
        device: String = "d1", token: String = "aa", topic: String = "t", type: String? = "alert",
        collapseID: String? = nil,
        expiresAt: Int64 = 10_000, payload: [UInt8] = [0, 1, 2, 255]
    ) -> StoredPush {
        StoredPush(
            id: 0, deviceID: device, token: token, topic: topic, pushType: type,
            priority: type == "background" ? 5 : 10,
            apnsID: "0a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d", collapseID: collapseID, expiration: nil,
            expiresAt: expiresAt, receivedAt: 1_000, payload: payload)
    }

    @Test(
        "pushes: insert, pending (VoIP first, exclusions, expiry), collapse, background slot, ack",
        arguments: StoreBackend.allCases)
    func pushes(backend: StoreBackend) async throws {
        let opened = try await backend.open()
        let store = opened.store
        let ids = try store.write { t in
            try [
                t.insertPush(Self.push(collapseID: "c")), t.insertPush(Self.push(type: "voip")),
                t.insertPush(Self.push(type: "background")), t.insertPush(Self.push(expiresAt: 1_500)),
                t.insertPush(Self.push(device: "d2")),
            ]
        }
        #expect(ids == ids.sorted() && Set(ids).count == 5)
        let pending = try store.read { try $0.pending(deviceID: "d1", excluding: [], limit: 10, now: 1_000) }
        #expect(pending.map(\.id) == [ids[1], ids[0], ids[2], ids[3]])
        #expect(pending.first?.payload == [0, 1, 2, 255])
        #expect(pending.first?.pushType == "voip")
        #expect(pending[1].collapseID == "c")
        #expect(
            try store.read { try $0.pending(deviceID: "d1", excluding: [ids[1], ids[2]], limit: 1, now: 2_000) }.map(
                \.id)
                == [ids[0]])
        #expect(try store.write { try $0.deletePending(deviceID: "d1", topic: "t", collapseID: "c") } == [ids[0]])
        #expect(try store.write { try $0.deletePendingBackground(deviceID: "d1", topic: "t") } == [ids[2]])
        #expect(try store.write { try $0.acknowledge(deviceID: "d1", ids: [ids[1], ids[4], 999_999]) } == 1)
        #expect(try store.read { try $0.pendingCounts() } == ["d1": 1, "d2": 1])
        #expect(try store.read { try $0.pendingCounts(deviceIDs: ["d1", "d3"]) } == ["d1": 1])
        #expect(try store.read { try $0.pendingTotal() } == 2)
        #expect(try store.write { try $0.deleteExpired(now: 1_500) } == 1)
        #expect(try store.read { try $0.pendingList(deviceID: nil, limit: 10) }.map(\.id) == [ids[4]])
        #expect(try store.read { try $0.pendingList(deviceID: "d1", limit: 10) }.isEmpty)
    }

    @Test("a failed write rolls back everything it did", arguments: StoreBackend.allCases)
    func rollback(backend: StoreBackend) async throws {
        let opened = try await backend.open()
        let store = opened.store
        struct Abort: Error {}
        #expect(throws: (any Error).self) {
            try store.write { t in
                _ = try t.insertPush(Self.push())
                throw Abort()
            }
        }
        #expect(try store.read { try $0.pendingTotal() } == 0)
        // A statement the database refuses (a duplicate device) fails the transaction; the store stays usable.
        let device = DeviceRecord(
            id: "d", authentication: .secret, credentialHash: [1, 2], createdAt: 1, revokedAt: nil)
        try store.write { try $0.insertDevice(device) }
        #expect(throws: (any Error).self) {
            try store.write { t in
                _ = try t.insertPush(Self.push())
                try t.insertDevice(device)
            }
        }
        #expect(try store.read { try $0.pendingTotal() } == 0)
        #expect(try store.read { try $0.device("d") }?.credentialHash == [1, 2])
    }

    @Test("devices, tokens, enrollment secrets, handler reports, provider keys", arguments: StoreBackend.allCases)
    func records(backend: StoreBackend) async throws {
        let opened = try await backend.open()
        let store = opened.store
        try store.write { t in
            for id in ["b", "a", "c"] {
                try t.insertDevice(
                    DeviceRecord(
                        id: id, authentication: id == "c" ? .certificate : .secret,
                        credentialHash: id == "c" ? nil : [9],
                        createdAt: 5, revokedAt: nil))
            }
            try t.insertToken(TokenRecord(token: "t1", deviceID: "a", topic: "x", createdAt: 1, revokedAt: nil))
            try t.insertToken(TokenRecord(token: "t2", deviceID: "a", topic: "x.voip", createdAt: 2, revokedAt: nil))
            try t.insertToken(TokenRecord(token: "t3", deviceID: "b", topic: "x", createdAt: 3, revokedAt: nil))
            _ = try t.insertPush(Self.push(device: "a", token: "t1"))
            _ = try t.insertPush(Self.push(device: "b", token: "t3"))
        }
        #expect(try store.read { try $0.devices() }.map(\.id) == ["a", "b", "c"])
        #expect(try store.read { try $0.devices(after: "a", limit: 1) }.map(\.id) == ["b"])
        #expect(try store.read { try $0.device("c") }?.authentication == .certificate)
        #expect(try store.read { try $0.device("zz") } == nil)
        #expect(try store.read { try $0.tokens(deviceID: "a") }.map(\.token) == ["t1", "t2"])
        #expect(try store.read { try $0.tokens(offset: 1, limit: 5) }.map(\.token) == ["t2", "t3"])
        #expect(try store.write { try $0.revokeToken("t1", deviceID: "b", at: 7) } == nil)
        #expect(try store.write { try $0.revokeToken("t1", deviceID: "a", at: 7) }?.count == 1)
        #expect(try store.read { try $0.token("t1") }?.revokedAt == 7)
        #expect(try store.write { try $0.revokeDevice("b", at: 8) })
        #expect(try store.write { try $0.revokeDevice("b", at: 9) } == false)
        #expect(try store.read { try $0.token("t3") }?.revokedAt == 8)
        #expect(try store.read { try $0.devicesRevoked(since: 8) } == ["b"])
        #expect(try store.read { try $0.pendingTotal() } == 0)

        let hash = [UInt8](repeating: 7, count: 32)
        try store.write { try $0.insertEnrollmentSecret(hash: hash, createdAt: 1, expiresAt: 100) }
        #expect(try store.write { try $0.consumeEnrollmentSecret(hash: hash, deviceID: "a", now: 100) } == false)
        #expect(try store.write { try $0.consumeEnrollmentSecret(hash: hash, deviceID: "a", now: 50) })
        #expect(try store.write { try $0.consumeEnrollmentSecret(hash: hash, deviceID: "a", now: 50) } == false)

        let reports = [
            HandlerReport(deviceID: "a", topic: "x", strikes: 2, voipBlocked: true, reportedAt: 3),
            HandlerReport(deviceID: "a", topic: "y", strikes: 0, voipBlocked: false, reportedAt: 3),
        ]
        try store.write { try $0.replaceHandlerReports(deviceID: "a", reports) }
        try store.write { try $0.replaceHandlerReports(deviceID: "a", Array(reports.prefix(1))) }
        let stored = try store.read { try $0.handlerReports(deviceID: nil) }
        #expect(stored.map(\.topic) == ["x"] && stored.first?.voipBlocked == true && stored.first?.strikes == 2)
        try store.write {
            try $0.replaceHandlerReports(
                deviceID: "b", [HandlerReport(deviceID: "b", topic: "z", strikes: 1, voipBlocked: false, reportedAt: 4)]
            )
        }
        #expect(try store.read { try $0.handlerReports(deviceIDs: ["b", "q\"'"]) }.map(\.topic) == ["z"])
        #expect(try store.read { try $0.handlerReports(deviceIDs: ["a", "b"]) }.map(\.topic) == ["x", "z"])
        #expect(try store.read { try $0.handlerReports(deviceIDs: []) }.isEmpty)

        let key = ProviderKeyRecord(
            keyID: "K1", teamID: "T1", publicKeyPEM: "pem", topics: ["x", "y"], createdAt: 1, revokedAt: nil)
        try store.write { try $0.upsertProviderKey(key) }
        #expect(try store.write { try $0.revokeProviderKey("K1", at: 4) })
        #expect(try store.write { try $0.revokeProviderKey("K1", at: 5) } == false)
        // A revoked key stays revoked through an upsert; only unrevoke brings it back.
        var updated = key
        updated.teamID = "T2"
        try store.write { try $0.upsertProviderKey(updated) }
        #expect(try store.read { try $0.providerKeys(includeRevoked: false) }.isEmpty)
        let all = try store.read { try $0.providerKeys(includeRevoked: true) }
        #expect(all.first?.teamID == "T2" && all.first?.revokedAt == 4 && all.first?.topics == ["x", "y"])
        #expect(try store.write { try $0.unrevokeProviderKey("K1") })
        #expect(try store.read { try $0.providerKeys(includeRevoked: false) }.map(\.keyID) == ["K1"])
    }

    @Test(
        "a database with a newer schema than this build is refused, with both versions",
        arguments: StoreBackend.allCases)
    func newerSchemaRefused(backend: StoreBackend) async throws {
        let opened = try await backend.open()
        #expect(opened.store.migration == GatewaySchema.Migration(from: 0, to: GatewaySchema.version))
        let newer = GatewaySchema.version + 1
        let reopen: () throws -> any GatewayStore
        switch backend {
        case .sqlite:
            let path = opened.directory.path + "/store.sqlite"
            let current = GatewaySchema.version
            #expect(try SQLiteGatewayStore(path: path).migration == .init(from: current, to: current))
            try SQLiteConnection(path: path, busyTimeout: 5_000).run("UPDATE schema_version SET version = ?", [newer])
            reopen = { try SQLiteGatewayStore(path: path) }
        case .postgres:
            let cluster = try #require(opened.cluster)
            try await cluster.psql("UPDATE schema_version SET version = \(newer)")
            reopen = { try PostgresGatewayStore(settings: StoreBackend.settings(of: cluster)) }
        }
        do {
            _ = try reopen()
            Issue.record("a schema newer than this build was accepted")
        } catch {
            #expect(
                "\(error)".contains(
                    "schema version \(newer) is newer than this rouse-gateway knows (\(GatewaySchema.version))"),
                "\(error)")
        }
    }

    @Test("an old SQLite database (3 GRDB migrations, no schema_version) is migrated to the current version")
    func sqliteUpgrade() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/store.sqlite"
        _ = try SQLiteGatewayStore(path: path)
        try SQLiteConnection(path: path, busyTimeout: 5_000).execute(
            """
            DROP TABLE schema_version; DROP TABLE webpush_subscriptions;
            DELETE FROM grdb_migrations
            WHERE identifier IN ('v4-schema-version', 'v5-several-nodes', 'v6-cluster-key', 'v7-webpush');
            """)
        #expect(try SQLiteGatewayStore(path: path).migration == .init(from: 3, to: GatewaySchema.version))
    }

    @Test("PostgreSQL: COMMIT is durable (synchronous_commit on) even when the server's default is off")
    func synchronousCommit() async throws {
        let cluster = try await PostgresCluster.start()
        try await cluster.psql("ALTER SYSTEM SET synchronous_commit = off")
        try await cluster.psql("SELECT pg_reload_conf()")
        #expect(
            try await cluster.psql("SHOW synchronous_commit").trimmingCharacters(in: .whitespacesAndNewlines) == "off")
        let store = try PostgresGatewayStore(settings: StoreBackend.settings(of: cluster))
        #expect(try store.synchronousCommit() == "on")
    }

    @Test("PostgreSQL: bad connection settings are refused at start, naming the setting")
    func badSettings() async throws {
        let cluster = try await PostgresCluster.start()
        let good = StoreBackend.settings(of: cluster)
        let wrongPassword = cluster.directory + "/wrong-password"
        try Data("nope\n".utf8).write(to: URL(fileURLWithPath: wrongPassword))
        var cases: [(PostgresSettings, String)] = []
        var settings = good
        settings.port = cluster.port == 65_000 ? 65_001 : 65_000
        cases.append((settings, "postgres.host/port: cannot connect"))
        settings = good
        settings.database = "nosuchdb"
        cases.append((settings, "postgres.database: cannot connect"))
        settings = good
        settings.passwordFile = wrongPassword
        cases.append((settings, "postgres.user/passwordFile: cannot connect"))
        settings = good
        settings.user = "nobody-here"
        cases.append((settings, "postgres.user/passwordFile: cannot connect"))
        settings = good
        settings.passwordFile = cluster.directory + "/missing"
        cases.append((settings, "postgres.passwordFile: cannot read"))
        settings = good
        settings.sslmode = "require"
        cases.append((settings, "postgres.sslmode"))
        settings = good
        settings.sslmode = "sometimes"
        cases.append((settings, "postgres.sslmode: 'sometimes' is not one of"))
        settings = PostgresSettings(url: "postgresql://rouse:nope@127.0.0.1:\(cluster.port)/postgres")
        cases.append((settings, "database (the URL's user/password)"))
        for (settings, expected) in cases {
            do {
                _ = try PostgresGatewayStore(settings: settings)
                Issue.record("accepted: \(settings.displayName), expected \(expected)")
            } catch {
                #expect(error.description.contains(expected), "\(error.description)")
                #expect(!error.description.contains("rouse-test") && !error.description.contains("nope"))
            }
        }
    }

    @Test("configuration: \"database\": \"postgresql://…\" or a \"postgres\" object selects PostgreSQL")
    func configuration() throws {
        let base = #""provider":{"listen":"x"},"device":{"listen":"y""#
        let url = try GatewayConfiguration.parse(
            data: Data(#"{\#(base)},"database":"postgresql://u@h:5433/db"}"#.utf8), baseDirectory: "/etc",
            source: "c.json")
        #expect(url.postgres == PostgresSettings(url: "postgresql://u@h:5433/db"))
        let object = try GatewayConfiguration.parse(
            data: Data(
                (#"{\#(base)},"postgres":{"host":"db","port":5433,"database":"rouse","user":"gw","#
                    + #""passwordFile":"pw","sslmode":"verify-full","poolSize":8}}"#).utf8),
            baseDirectory: "/etc", source: "c.json")
        #expect(
            object.postgres
                == PostgresSettings(
                    host: "db", port: 5433, database: "rouse", user: "gw", passwordFile: "/etc/pw",
                    sslmode: "verify-full",
                    poolSize: 8))
        let sqlite = try GatewayConfiguration.parse(
            data: Data(#"{\#(base)},"database":"g.sqlite"}"#.utf8), baseDirectory: "/etc", source: "c.json")
        #expect(sqlite.postgres == nil && sqlite.databasePath == "/etc/g.sqlite")
        for (text, expected) in [
            (#"{\#(base)},"database":"g.sqlite","postgres":{"host":"db"}}"#, "give one store"),
            (#"{\#(base)},"postgres":{"host":"db","port":0}}"#, "postgres.port: 0 is not a TCP port"),
            (#"{\#(base)},"postgres":{"host":"db","sslmode":"yes"}}"#, "postgres.sslmode: 'yes'"),
            (#"{\#(base)},"postgres":{"host":"db","poolSize":1}}"#, "postgres.poolSize"),
            (#"{\#(base)},"postgres":{"hostname":"db"}}"#, "unknown member $.postgres.hostname"),
        ] {
            do {
                _ = try GatewayConfiguration.parse(data: Data(text.utf8), baseDirectory: "/etc", source: "c.json")
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.description.contains(expected), "\(error.description)")
            }
        }
    }
}
