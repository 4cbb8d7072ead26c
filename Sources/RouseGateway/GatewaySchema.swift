/// The store's schema version, shared by both backends: a `schema_version` table holds the version a database is
/// at. A gateway migrates an older database when it opens it (or `rouse gateway migrate` does, explicitly) and
/// refuses one newer than it knows: a downgraded binary must not write into tables it does not understand.
///
/// History: 1 the tables, 2 handler reports, 3 backlog totals per token and device (SQLite, through GRDB's
/// migrator), 4 the `schema_version` table itself; PostgreSQL starts at 4 with everything at once. 5: several
/// nodes (PostgreSQL: per-device sequence numbers, channel owners, node leases; SQLite: nothing but the number). 6: the
/// cluster key that seals node messages (PostgreSQL; SQLite: the number). 7: WebPush subscriptions (both).
package enum GatewaySchema {
    /// The newest version this build knows.
    package static let version = 7

    /// What opening a store did to its schema.
    package struct Migration: Sendable, Equatable {
        /// The version found (0: an empty database).
        package var from: Int
        /// The version now.
        package var to: Int

        /// A migration from one version to another.
        package init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// The error for a database newer than this build.
    static func tooNew(_ found: Int, in database: String) -> GatewayError {
        .storage(
            "\(database): schema version \(found) is newer than this rouse-gateway knows (\(version)): run the "
                + "newer rouse-gateway, or restore the database from a backup taken before the upgrade")
    }

    /// PostgreSQL migrations: each brings the schema from the version before it to its own.
    static let postgresMigrations: [(version: Int, sql: String)] = [
        (
            4,
            """
            CREATE TABLE devices(
                id text PRIMARY KEY,
                authentication text NOT NULL,
                credential_hash bytea,
                created_at bigint NOT NULL,
                revoked_at bigint);
            CREATE INDEX devices_by_revocation ON devices(revoked_at) WHERE revoked_at IS NOT NULL;
            CREATE TABLE enrollment_secrets(
                hash bytea PRIMARY KEY,
                created_at bigint NOT NULL,
                expires_at bigint,
                used_at bigint,
                device_id text);
            CREATE TABLE tokens(
                token text PRIMARY KEY,
                device_id text NOT NULL,
                topic text NOT NULL,
                created_at bigint NOT NULL,
                revoked_at bigint);
            CREATE INDEX tokens_by_device ON tokens(device_id);
            CREATE TABLE pushes(
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                device_id text NOT NULL,
                token text NOT NULL,
                topic text NOT NULL,
                push_type text,
                priority integer NOT NULL,
                apns_id text NOT NULL,
                collapse_id text,
                expiration bigint,
                expires_at bigint NOT NULL,
                received_at bigint NOT NULL,
                is_voip boolean NOT NULL,
                payload bytea NOT NULL);
            CREATE INDEX pushes_by_device ON pushes(device_id, is_voip DESC, seq);
            CREATE INDEX pushes_by_expiry ON pushes(expires_at);
            CREATE INDEX pushes_by_token ON pushes(token, seq);
            CREATE TABLE provider_keys(
                key_id text PRIMARY KEY,
                team_id text NOT NULL,
                public_key_pem text NOT NULL,
                topics text,
                created_at bigint NOT NULL,
                revoked_at bigint);
            CREATE TABLE handler_reports(
                device_id text NOT NULL,
                topic text NOT NULL,
                strikes integer NOT NULL,
                voip_blocked boolean NOT NULL,
                reported_at bigint NOT NULL,
                PRIMARY KEY(device_id, topic));
            CREATE TABLE token_backlog(token text PRIMARY KEY, pushes bigint NOT NULL, bytes bigint NOT NULL);
            CREATE TABLE device_backlog(device_id text PRIMARY KEY, pushes bigint NOT NULL, bytes bigint NOT NULL);
            CREATE FUNCTION pushes_backlog_insert() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO token_backlog AS b(token, pushes, bytes) VALUES (NEW.token, 1, octet_length(NEW.payload))
                    ON CONFLICT(token) DO UPDATE SET pushes = b.pushes + 1, bytes = b.bytes + excluded.bytes;
                INSERT INTO device_backlog AS b(device_id, pushes, bytes)
                    VALUES (NEW.device_id, 1, octet_length(NEW.payload))
                    ON CONFLICT(device_id) DO UPDATE SET pushes = b.pushes + 1, bytes = b.bytes + excluded.bytes;
                RETURN NULL;
            END $$;
            CREATE FUNCTION pushes_backlog_delete() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE token_backlog SET pushes = pushes - 1, bytes = bytes - octet_length(OLD.payload)
                    WHERE token = OLD.token;
                DELETE FROM token_backlog WHERE token = OLD.token AND pushes <= 0;
                UPDATE device_backlog SET pushes = pushes - 1, bytes = bytes - octet_length(OLD.payload)
                    WHERE device_id = OLD.device_id;
                DELETE FROM device_backlog WHERE device_id = OLD.device_id AND pushes <= 0;
                RETURN NULL;
            END $$;
            CREATE TRIGGER pushes_backlog_insert AFTER INSERT ON pushes
                FOR EACH ROW EXECUTE FUNCTION pushes_backlog_insert();
            CREATE TRIGGER pushes_backlog_delete AFTER DELETE ON pushes
                FOR EACH ROW EXECUTE FUNCTION pushes_backlog_delete();
            """
        ),
        (
            5,
            """
            ALTER TABLE devices ADD COLUMN next_seq bigint NOT NULL DEFAULT 0,
                ADD COLUMN owner_node text, ADD COLUMN owner_channel bigint;
            CREATE INDEX devices_by_owner ON devices(owner_node) WHERE owner_node IS NOT NULL;
            ALTER TABLE pushes ADD COLUMN device_seq bigint;
            DROP INDEX pushes_by_device;
            CREATE INDEX pushes_by_device ON pushes(device_id, is_voip DESC, device_seq NULLS FIRST, seq);
            CREATE TABLE gateway_nodes(
                id text PRIMARY KEY,
                started_at bigint NOT NULL,
                lease_expires_at bigint NOT NULL);
            """
        ),
        (
            6,
            """
            CREATE TABLE gateway_cluster_key(
                id integer PRIMARY KEY CHECK (id = 1),
                key bytea NOT NULL);
            REVOKE ALL ON gateway_cluster_key FROM PUBLIC;
            """
        ),
        (7, webPushTable),
    ]

    /// Version 7, the same SQL for both backends: WebPush subscriptions (`WebPushSubscriptionRecord`).
    static let webPushTable = """
        CREATE TABLE webpush_subscriptions(
            id text PRIMARY KEY NOT NULL,
            device_id text NOT NULL,
            app text NOT NULL,
            token text NOT NULL,
            vapid_key text,
            created_at bigint NOT NULL,
            revoked_at bigint);
        CREATE INDEX webpush_subscriptions_by_device ON webpush_subscriptions(device_id);
        """
}
