-- The hook's known-project lookup (serving/hooks/query.py) asks `lower(project) = lower($1)` on
-- every prompt; memories_project_idx indexes `project` as written, so the lookup scanned all
-- of it (15 ms at 100K memories, issue 35). An expression index answers it in one probe.
CREATE INDEX memories_lower_project_idx ON memories (lower(project));
