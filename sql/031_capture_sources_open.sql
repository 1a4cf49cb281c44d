-- Captured tasks of every registered source (memory_pipeline/models/sources.py), not three.
-- 007 listed the sources in a CHECK; the registry is now the one list (a connector is one
-- package plus one registry line), so the database checks only that a source is a registry name
-- (lowercase letters, digits, underscores). Kiro CLI (`kiro_cli`) and Kiro IDE (`kiro_ide`) are
-- the first sources 007's list did not hold.
ALTER TABLE captured_tasks DROP CONSTRAINT IF EXISTS captured_tasks_source_check;
ALTER TABLE captured_tasks ADD CONSTRAINT captured_tasks_source_name
    CHECK (source ~ '^[a-z][a-z0-9_]{0,39}$');
