import Foundation
import RouseGateway
import RouseSQLite
import RouseTestSupport
import Testing

/// The SQLite store on the C API keeps the on-disk format of the GRDB-based store it replaced: a database GRDB made
/// opens and keeps working, and a new database is the same schema with the same `grdb_migrations` rows
/// (Tests/Fixtures/gateway-grdb-v7.sql: made by the GRDB build, the commands in its header).
@Suite("Gateway SQLite store: the GRDB-era format", .timeLimit(.minutes(2)))
struct StoreMigrationCompatibilityTests {
    /// A fresh file holding the fixture, in WAL mode as GRDB's pool left it.
    static func grdbDatabase(in directory: TemporaryDirectory) throws -> String {
        let path = directory.path + "/grdb.sqlite"
        let script = try String(
            contentsOfFile: Repository.root + "/Tests/Fixtures/gateway-grdb-v7.sql", encoding: .utf8)
        let db = try SQLiteConnection(path: path, busyTimeout: 5_000)
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute(script)
        return path
    }

    /// `sqlite_master` as text, one line per object, by name (what a schema is on disk).
    static func schema(_ path: String) throws -> [String] {
        try SQLiteConnection(path: path, busyTimeout: 5_000).rows(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ) { row in
            "\(try row.string("type")) \(try row.string("name")) on \(try row.string("tbl_name")): "
                + (try row.optionalString("sql") ?? "(no sql)")
        }
    }

    static func migrations(_ path: String) throws -> [String] {
        try SQLiteConnection(path: path, busyTimeout: 5_000).rows(
            "SELECT identifier FROM grdb_migrations ORDER BY rowid"
        ) { try $0.string("identifier") }
    }

    @Test("a database made by the GRDB store opens at version 7 and its rows read and write")
    func grdbDatabaseKeepsWorking() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.grdbDatabase(in: directory)
        let store = try SQLiteGatewayStore(path: path)
        #expect(store.migration == .init(from: 7, to: GatewaySchema.version))
        let settings = try store.durabilitySettings()
        #expect(settings.journalMode == "wal" && settings.synchronous == 2)

        #expect(try store.read { try $0.devices() }.map(\.id) == ["dev-a", "dev-b"])
        let device = try store.read { try $0.device("dev-a") }
        #expect(device?.credentialHash == [1, 2, 3, 4, 5] && device?.authentication == .secret)
        #expect(try store.read { try $0.device("dev-b") }?.authentication == .certificate)
        #expect(
            try store.read { try $0.tokens(deviceID: "dev-a") }.map(\.topic) == [
                "com.example.app", "com.example.app.voip",
            ])
        let pending = try store.read {
            try $0.pending(deviceID: "dev-a", excluding: [], limit: 10, now: 1_764_300_000_010)
        }
        #expect(pending.map(\.id) == [2, 1])  // VoIP first
        #expect(pending.map(\.payload) == [Array(#"{"a":1}"#.utf8), Array("{}".utf8)])
        #expect(pending.last?.collapseID == "c1" && pending.first?.expiration == 0 && pending.last?.expiration == nil)
        #expect(try store.read { try $0.pendingCounts() } == ["dev-a": 2])
        let reports = try store.read { try $0.handlerReports(deviceID: nil) }
        #expect(reports.map(\.strikes) == [2] && reports.first?.voipBlocked == true)
        let keys = try store.read { try $0.providerKeys(includeRevoked: true) }
        #expect(keys.map(\.keyID) == ["ABCDEFGHIJ", "KLMNOPQRST"])
        #expect(keys.first?.topics == ["com.example.app", "com.example.app.voip"] && keys.first?.revokedAt == nil)
        #expect(keys.last?.revokedAt != nil)
        #expect(try store.read { try $0.webPushSubscriptions(deviceID: "dev-a") }.map(\.token) == ["aa01"])

        // Writes: the GRDB-era triggers keep the totals, AUTOINCREMENT continues after the last id.
        let id = try store.write { t in
            try t.insertPush(
                StoredPush(
                    id: 0, deviceID: "dev-b", token: "bb", topic: "t", pushType: "alert", priority: 10,
                    apnsID: "2a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d", collapseID: nil, expiration: nil,
                    expiresAt: 4_102_444_800_000, receivedAt: 1, payload: []))
        }
        #expect(id == 3)
        #expect(
            try store.read { try $0.pending(deviceID: "dev-b", excluding: [], limit: 1, now: 2) }.first?.payload == [])
        #expect(try store.write { try $0.acknowledge(deviceID: "dev-a", ids: [1, 2]) } == 2)
        #expect(try store.read { try $0.pendingCounts() } == ["dev-b": 1])
        let hash: [UInt8] = [
            0x76, 0xac, 0x87, 0xf5, 0xd6, 0x3c, 0x0d, 0x2d, 0x1c, 0xee, 0xde, 0xda, 0x2b, 0xf9, 0xc5, 0x02,
            0xc7, 0x7a, 0x3f, 0xc1, 0x05, 0xa7, 0x67, 0x3e, 0xc9, 0xbb, 0x5f, 0xdd, 0x8e, 0xe7, 0xd7, 0xec,
        ]
        #expect(
            try store.write { try $0.consumeEnrollmentSecret(hash: hash, deviceID: "dev-c", now: 1_795_878_717_450) })
        #expect(try store.write { try $0.revokeDevice("dev-a", at: 9) })
        #expect(try store.read { try $0.webPushSubscription("wp1") }?.revokedAt == 9)
        #expect(try Self.migrations(path).count == 7)
    }

    @Test("a new database has the GRDB store's schema and grdb_migrations, statement for statement")
    func newDatabaseSameSchema() throws {
        let directory = try TemporaryDirectory()
        let grdb = try Self.grdbDatabase(in: directory)
        let fresh = directory.path + "/fresh.sqlite"
        #expect(try SQLiteGatewayStore(path: fresh).migration == .init(from: 0, to: GatewaySchema.version))
        let expected = try Self.schema(grdb)
        #expect(expected.count == 18)
        #expect(try Self.schema(fresh) == expected)
        #expect(try Self.migrations(fresh) == Self.migrations(grdb))
        #expect(
            try SQLiteConnection(path: fresh, busyTimeout: 5_000).row("PRAGMA journal_mode") {
                try $0.string("journal_mode")
            } == "wal")
    }

    @Test("reads are snapshots beside the writer: a read inside an open write sees the last commit")
    func readsBesideTheWriter() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteGatewayStore(path: directory.path + "/store.sqlite")
        let push = StoredPush(
            id: 0, deviceID: "d", token: "t", topic: "x", pushType: "alert", priority: 10,
            apnsID: "0a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d", collapseID: nil, expiration: nil, expiresAt: 10,
            receivedAt: 1, payload: [1])
        _ = try store.write { try $0.insertPush(push) }
        let seen = try store.write { t in
            _ = try t.insertPush(push)
            return (inside: try t.pendingTotal(), reader: try store.read { try $0.pendingTotal() })
        }
        #expect(seen.inside == 2 && seen.reader == 1)
        // A reader refuses writes (GRDB's readers were read-only too).
        #expect(throws: GatewayError.self) { try store.read { _ = try $0.insertPush(push) } }
        #expect(try store.read { try $0.pendingTotal() } == 2)
    }
}
