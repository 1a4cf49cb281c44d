-- Kiro CLI (closed source since the rename): the Amazon Q migrations (schema_amazon_q.sql) plus
-- the conversations_v2 table, DDL as its public readers create it (entireio/cli
-- cmd/entire/cli/agent/kiro; a Go collector test; aws-bench's kiro_cli agent reads
-- `SELECT value FROM conversations_v2 ORDER BY created_at`).
CREATE TABLE conversations_v2 (
    key TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (key, conversation_id)
);
