"""The heal names every column that could hold text: a migration that adds one must say how the
heal treats it (memory_pipeline/heal/surfaces.py), or this fails."""

from __future__ import annotations

import psycopg

from memory_pipeline.heal.surfaces import DERIVED, NO_USER_TEXT, TABLES

# What can hold text: strings, JSON, arrays of strings, full-text vectors, and vectors
# computed from text.
TEXT_LIKE = """
SELECT c.table_name, c.column_name FROM information_schema.columns c
JOIN information_schema.tables t USING (table_schema, table_name)
WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
  AND (c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'tsvector')
       OR c.udt_name IN ('_text', '_varchar', 'vector'))
ORDER BY 1, 2
"""


def declared() -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for table in TABLES:
        for column in table.columns:
            out[(table.name, column)] = "healed"
    for name, list_ in (("derived", DERIVED), ("no user text", NO_USER_TEXT)):
        for table_name, columns in list_.items():
            for column in columns:
                assert (table_name, column) not in out, f"{table_name}.{column} listed twice"
                out[(table_name, column)] = name
    return out


def test_every_text_column_of_the_schema_is_healed_derived_or_allowed(
    conn: psycopg.Connection,
) -> None:
    found = {(t, c) for t, c in conn.execute(TEXT_LIKE).fetchall()}
    named = declared()
    missing = sorted(found - set(named))
    assert not missing, (
        "columns that may hold text the heal does not cover; add each to "
        "memory_pipeline/heal/surfaces.py (TABLES to rewrite it, DERIVED if the heal "
        "recomputes it, NO_USER_TEXT with the reason it cannot hold text): "
        + ", ".join(f"{t}.{c}" for t, c in missing)
    )
    stale = sorted(set(named) - found)
    assert not stale, f"surfaces.py names columns the schema lacks: {stale}"


def test_columns_written_by_users_are_rewritten_not_allowed() -> None:
    """The allow-list cannot swallow the columns the issue names."""
    named = declared()
    for column in [
        ("agent_turns", "prompt"),
        ("agent_turns", "outcome"),
        ("captured_tasks", "title"),
        ("captured_tasks", "native_context"),
        ("memories", "title"),
        ("memories", "content"),
        ("memories", "metadata"),
        ("memory_passages", "text"),
        ("dream_cycle_runs", "digest"),
        ("dream_cycle_candidates", "candidate_json"),
        ("briefing_items", "headline"),
        ("briefing_items", "detail"),
        ("express_feedback", "note"),
        ("memory_relationships", "evidence"),
    ]:
        assert named[column] == "healed", column
