-- A rouse-gateway SQLite database exactly as the GRDB-based store (GRDB 7.10.0, before RouseSQLite) left it: schema
-- version 7, GRDB's grdb_migrations table, rows of every table. StoreMigrationCompatibilityTests loads it into a
-- fresh file (in WAL mode, as GRDB left its databases) and opens it with today's store.
-- Made with a debug `rouse` built from main on 2026-11-28 12:38 UTC (the store's SQL is the same from dc9ad6d to
-- 0b92d9f, the last commit with GRDB), then dumped:
--   rouse gateway migrate --database store.sqlite
--   rouse gateway devices enroll-secret --database store.sqlite --validity-hours 1
--   openssl ecparam -name prime256v1 -genkey -noout -out k.pem && openssl ec -in k.pem -pubout -out pub.pem
--   rouse gateway keys add --database store.sqlite --key-id ABCDEFGHIJ --team-id TEAM123456 --public-key pub.pem \
--       --topic com.example.app --topic com.example.app.voip
--   rouse gateway keys add --database store.sqlite --key-id KLMNOPQRST --team-id TEAM123456 --public-key pub.pem \
--       --topic com.example.other
--   rouse gateway keys revoke --database store.sqlite KLMNOPQRST
--   sqlite3 store.sqlite  (the INSERTs into devices, tokens, pushes, handler_reports, webpush_subscriptions below;
--       the backlog triggers wrote token_backlog and device_backlog)
--   sqlite3 store.sqlite .dump
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
INSERT INTO grdb_migrations VALUES('v1');
INSERT INTO grdb_migrations VALUES('v2-handler-reports');
INSERT INTO grdb_migrations VALUES('v3-backlog-totals');
INSERT INTO grdb_migrations VALUES('v4-schema-version');
INSERT INTO grdb_migrations VALUES('v5-several-nodes');
INSERT INTO grdb_migrations VALUES('v6-cluster-key');
INSERT INTO grdb_migrations VALUES('v7-webpush');
CREATE TABLE devices(
    id TEXT PRIMARY KEY NOT NULL,
    authentication TEXT NOT NULL,
    credential_hash BLOB,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER);
INSERT INTO devices VALUES('dev-a','secret',X'0102030405',1764300000000,NULL);
INSERT INTO devices VALUES('dev-b','certificate',NULL,1764300000001,NULL);
CREATE TABLE enrollment_secrets(
    hash BLOB PRIMARY KEY NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    used_at INTEGER,
    device_id TEXT);
INSERT INTO enrollment_secrets VALUES(X'76ac87f5d63c0d2d1ceededa2bf9c502c77a3fc105a7673ec9bb5fdd8ee7d7ec',1795878717449,1795882317449,NULL,NULL);
CREATE TABLE tokens(
    token TEXT PRIMARY KEY NOT NULL,
    device_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER);
INSERT INTO tokens VALUES('aa01','dev-a','com.example.app',1764300000002,NULL);
INSERT INTO tokens VALUES('aa02','dev-a','com.example.app.voip',1764300000003,NULL);
CREATE TABLE pushes(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    device_id TEXT NOT NULL,
    token TEXT NOT NULL,
    topic TEXT NOT NULL,
    push_type TEXT,
    priority INTEGER NOT NULL,
    apns_id TEXT NOT NULL,
    collapse_id TEXT,
    expiration INTEGER,
    expires_at INTEGER NOT NULL,
    received_at INTEGER NOT NULL,
    is_voip INTEGER NOT NULL,
    payload BLOB NOT NULL);
INSERT INTO pushes VALUES(1,'dev-a','aa01','com.example.app','alert',10,'0a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d','c1',NULL,4102444800000,1764300000004,0,X'7b7d');
INSERT INTO pushes VALUES(2,'dev-a','aa02','com.example.app.voip','voip',10,'1a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d',NULL,0,4102444800000,1764300000005,1,X'7b2261223a317d');
CREATE TABLE provider_keys(
    key_id TEXT PRIMARY KEY NOT NULL,
    team_id TEXT NOT NULL,
    public_key_pem TEXT NOT NULL,
    topics TEXT,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER);
INSERT INTO provider_keys VALUES('ABCDEFGHIJ','TEAM123456',replace('-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE6mr+4liD2hcvueR6eRITTg/pWkFG\nzmCtkMrFKicWH6MKituWPbejbE0JdXRJdN40ooFd6kjwxPYVIiQ0isYirg==\n-----END PUBLIC KEY-----\n','\n',char(10)),'com.example.app,com.example.app.voip',1795878717587,NULL);
INSERT INTO provider_keys VALUES('KLMNOPQRST','TEAM123456',replace('-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE6mr+4liD2hcvueR6eRITTg/pWkFG\nzmCtkMrFKicWH6MKituWPbejbE0JdXRJdN40ooFd6kjwxPYVIiQ0isYirg==\n-----END PUBLIC KEY-----\n','\n',char(10)),'com.example.other',1795878717761,1795878724181);
CREATE TABLE handler_reports(
    device_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    strikes INTEGER NOT NULL,
    voip_blocked INTEGER NOT NULL,
    reported_at INTEGER NOT NULL,
    PRIMARY KEY(device_id, topic));
INSERT INTO handler_reports VALUES('dev-a','com.example.app',2,1,1764300000006);
CREATE TABLE token_backlog(
    token TEXT PRIMARY KEY NOT NULL, pushes INTEGER NOT NULL, bytes INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO token_backlog VALUES('aa01',1,2);
INSERT INTO token_backlog VALUES('aa02',1,7);
CREATE TABLE device_backlog(
    device_id TEXT PRIMARY KEY NOT NULL, pushes INTEGER NOT NULL, bytes INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO device_backlog VALUES('dev-a',2,9);
CREATE TABLE schema_version(version INTEGER NOT NULL);
INSERT INTO schema_version VALUES(7);
CREATE TABLE webpush_subscriptions(
    id text PRIMARY KEY NOT NULL,
    device_id text NOT NULL,
    app text NOT NULL,
    token text NOT NULL,
    vapid_key text,
    created_at bigint NOT NULL,
    revoked_at bigint);
INSERT INTO webpush_subscriptions VALUES('wp1','dev-a','app','aa01',NULL,1764300000007,NULL);
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('pushes',2);
CREATE INDEX tokens_by_device ON tokens(device_id);
CREATE INDEX pushes_by_device ON pushes(device_id, is_voip DESC, seq);
CREATE INDEX pushes_by_expiry ON pushes(expires_at);
CREATE INDEX pushes_by_token ON pushes(token);
CREATE TRIGGER pushes_backlog_insert AFTER INSERT ON pushes BEGIN
    INSERT INTO token_backlog(token, pushes, bytes) VALUES (NEW.token, 1, length(NEW.payload))
        ON CONFLICT(token) DO UPDATE SET pushes = pushes + 1, bytes = bytes + excluded.bytes;
    INSERT INTO device_backlog(device_id, pushes, bytes)
        VALUES (NEW.device_id, 1, length(NEW.payload))
        ON CONFLICT(device_id) DO UPDATE SET pushes = pushes + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER pushes_backlog_delete AFTER DELETE ON pushes BEGIN
    UPDATE token_backlog SET pushes = pushes - 1, bytes = bytes - length(OLD.payload)
        WHERE token = OLD.token;
    DELETE FROM token_backlog WHERE token = OLD.token AND pushes <= 0;
    UPDATE device_backlog SET pushes = pushes - 1, bytes = bytes - length(OLD.payload)
        WHERE device_id = OLD.device_id;
    DELETE FROM device_backlog WHERE device_id = OLD.device_id AND pushes <= 0;
END;
CREATE INDEX webpush_subscriptions_by_device ON webpush_subscriptions(device_id);
COMMIT;
