-- Issue 32 (Cursor): captured tasks of source 'cursor'. The sources of captured tasks are the
-- registry in memory_pipeline/models/sources.py (pydantic checks every ParsedTask's `source`
-- against it before it is stored); the list fixed in 007's CHECK would refuse it. IF EXISTS:
-- another connector's migration of issue 32 may have dropped the same constraint first.
ALTER TABLE captured_tasks DROP CONSTRAINT IF EXISTS captured_tasks_source_check;
