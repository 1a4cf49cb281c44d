"""Relationship discovery: typed edges between memories (issue 14).

Each step is a module: `candidates` (a day's memories and their vector neighbours through the
serving space's HNSW index), `structural` (derived_from, related_to), `duplicates` (near-duplicate
statements folded into one kept memory that counts its observations), `judge_offline` and
`judge_ollama` (supports / contradicts / extends / requires / blocks / inspires between candidate
pairs), `store` (writing, expiring and counting edges), `flags` and `evaluation` (what serving
reads), `definitions` (the Dagster asset). Nothing here but `definitions` imports Dagster.
"""
