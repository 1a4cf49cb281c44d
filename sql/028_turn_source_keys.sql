-- A turn's tombstone outlives a change of the redaction rules. `content_sha256` is a hash of the
-- stored, redacted text, so rules that redact more give the same source turn a new hash and a
-- forgotten turn would be captured again. `source_key` is an HMAC of the turn's source text
-- (before redaction) under the home's key (MEMORY_HOME/forget-audit.key): forget tombstones it
-- beside the content hash and capture checks both. Keyed, so it confirms no guessed text.
-- Turns captured before this migration have none; their content hash still guards them.
ALTER TABLE agent_turns ADD COLUMN source_key text;
