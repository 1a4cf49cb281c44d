"""`memory-pipeline bench`: the performance harness (issue 12), kept out of the default tests.

Each benchmark is a module here with one entry point,
`run(scale: int, progress: Callable[[str], None]) -> list[Figure]`, registered by name in
`BENCHMARKS`; later stages add their own. `report.py` prints the figures with the machine and
the commit, and appends them to `BENCHMARKS.md`. A tiny scale of each runs in the tests so the
harness never rots.
"""

from __future__ import annotations

# name -> module; imported only when that benchmark runs (each pulls in heavy dependencies).
BENCHMARKS: dict[str, str] = {
    "search": "memory_pipeline.bench.search",
    "embed": "memory_pipeline.bench.embed",
    "ingest": "memory_pipeline.bench.ingest",
    "backup": "memory_pipeline.bench.backup",
    "relationships": "memory_pipeline.bench.relationships",
    "freshness": "memory_pipeline.bench.freshness",
}
