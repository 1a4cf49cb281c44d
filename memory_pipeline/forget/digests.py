"""Dream digests quote the memories a run's candidates rest on, in `dream_cycle_runs.digest` and
in a Markdown file under MEMORY_HOME/dream/. A forget that touches such a run replaces the stored
digest with a note and deletes the file (after the transaction commits), so neither keeps the
forgotten text."""

from __future__ import annotations

from pathlib import Path

import psycopg

REMOVED = "(digest removed by `memory-pipeline forget`: it quoted memories that were forgotten)"


def touched_runs(conn: psycopg.Connection) -> list[tuple[str, str | None]]:
    """Dream runs (id, digest file) whose candidates made, target or rest on a memory in the
    forget set `forget_m`. Called before the cascade deletes those candidates."""
    return [
        (str(r[0]), r[1])
        for r in conn.execute(
            "SELECT DISTINCT r.id, r.digest_path FROM dream_cycle_runs r"
            " JOIN dream_cycle_candidates c ON c.run_id = r.id"
            " WHERE c.created_memory_id IN (SELECT id FROM forget_m)"
            " OR c.target_memory_id IN (SELECT id FROM forget_m)"
            " OR c.id IN (SELECT candidate_id FROM dream_candidate_memories"
            "             WHERE memory_id IN (SELECT id FROM forget_m))"
        )
    ]


def scrub(conn: psycopg.Connection, runs: list[tuple[str, str | None]]) -> int:
    """Replace the stored digest of the runs that survive the cascade; returns how many."""
    if not runs:
        return 0
    return conn.execute(
        "UPDATE dream_cycle_runs SET digest = %s WHERE id = ANY(%s::uuid[])",
        [REMOVED, [run_id for run_id, _ in runs]],
    ).rowcount


def remove_files(runs: list[tuple[str, str | None]]) -> int:
    """Delete the runs' digest files; returns how many existed."""
    removed = 0
    for _, path in runs:
        if path and Path(path).is_file():
            Path(path).unlink()
            removed += 1
    return removed
