-- aws/amazon-q-developer-cli @ 15cc8f3cd18c (2026-04-23), crates/chat-cli/src/database/sqlite_migrations/
-- 000..007, verbatim, in the order Database::migrate applies them (MIT OR Apache-2.0).
CREATE TABLE IF NOT EXISTS migrations (
    id INTEGER PRIMARY KEY,
    version INTEGER NOT NULL,
    migration_time INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY,
    command TEXT,
    shell TEXT,
    pid INTEGER,
    session_id TEXT,
    cwd TEXT,
    time INTEGER,
    in_ssh INTEGER,
    in_docker INTEGER,
    hostname TEXT,
    exit_code INTEGER
);
ALTER TABLE history DROP COLUMN in_ssh;
ALTER TABLE history DROP COLUMN in_docker;
ALTER TABLE history RENAME COLUMN time TO start_time;
ALTER TABLE history ADD COLUMN end_time INTEGER;
ALTER TABLE history ADD COLUMN duration INTEGER;
CREATE TABLE state (
    key TEXT PRIMARY KEY,
    value TEXT
);
-- We create a separate auth_kv to ensure the data is not available in all the same
-- places that the state is available in
CREATE TABLE auth_kv (
    key TEXT PRIMARY KEY,
    value TEXT
);
ALTER TABLE state RENAME TO state_old;
CREATE TABLE state (
    key TEXT PRIMARY KEY,
    value BLOB
);
INSERT INTO state SELECT key, value FROM state_old;
DROP TABLE state_old;
CREATE TABLE conversations (
    key TEXT PRIMARY KEY,
    value TEXT
);
