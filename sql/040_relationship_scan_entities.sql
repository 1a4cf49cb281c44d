-- A reversal needs a subject entity both memories mention (issue 34), so which edges hold now
-- depends on a memory's entity mentions as well as its text: a scan records the set it saw
-- (sha256 of the memory's mentioned entity ids, sorted, comma-separated), and a memory whose
-- set changed is scanned again.
ALTER TABLE relationship_scans ADD COLUMN entities_sha256 text;

-- Scans of a model judge keep their verdicts (asking the model again would change nothing but
-- the gate, which every run applies to live edges): they take the current set. Scans of the
-- offline rules stay NULL, so the next run judges those memories again under the new rules.
UPDATE relationship_scans s SET entities_sha256 = (
    SELECT encode(sha256(convert_to(coalesce(string_agg(DISTINCT me.entity_id::text, ','
        ORDER BY me.entity_id::text), ''), 'UTF8')), 'hex')
    FROM memory_entities me WHERE me.memory_id = s.memory_id)
WHERE s.backend <> 'offline-rules';
