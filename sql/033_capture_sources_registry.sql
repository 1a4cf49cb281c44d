-- Issue 32: the sources of captured tasks are the registry in memory_pipeline/models/sources.py
-- (every ParsedTask's `source` is checked against it before it is stored). The list fixed in
-- 007's CHECK would refuse every connector added since (opencode, aider, ...): it goes.
-- IF EXISTS: another branch of issue 32 may have dropped it first.
ALTER TABLE captured_tasks DROP CONSTRAINT IF EXISTS captured_tasks_source_check;
