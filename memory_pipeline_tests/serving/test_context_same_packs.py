"""context() was made to do less search work (issue 35: the search's own matched passages and
vectors reused, narrower near-passage work): every pack must stay exactly what it was.

The reference is the packs of the code before that change, recorded on the benchmark corpus at
scale 300 (deterministic: same rows and ids for a scale and seed) for the demo's gold questions
and a fifth of the long-conversation gold questions, each also asked about the current state
("... now?", which packs the newest statement first), and the bench's filtered queries (project,
type, source, a 30-day window); each at 400, 1,000 and 2,000 tokens, with the clock fixed at the
corpus's end.

To record it again after an intended change of what a pack holds:
    MEMORY_PACK_SNAPSHOT_WRITE=1 .venv/bin/pytest -q -p no:cacheprovider -n 0 \\
        memory_pipeline_tests/serving/test_context_same_packs.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from memory_pipeline.bench.corpus import CORPUS_END, load_corpus
from memory_pipeline.bench.search import build_queries
from memory_pipeline.db.connection import connect
from memory_pipeline.settings import REPO_ROOT
from serving.context_pack import context
from serving.models import SearchFilters
from serving.render import pack_text

SNAPSHOT = Path(__file__).parent / "data" / "context_packs_scale300.json"
BUDGETS = (400, 1000, 2000)
GOLD = (
    (REPO_ROOT / "memory_pipeline" / "demo" / "gold.jsonl", 1),
    (REPO_ROOT / "evaluation" / "long_conversations" / "gold.jsonl", 5),
)


def _queries(info: Any) -> list[tuple[str, SearchFilters]]:
    out: list[tuple[str, SearchFilters]] = []
    for path, every in GOLD:
        lines = [line for line in path.read_text().splitlines() if line][::every]
        for line in lines:
            out.append((json.loads(line)["query"], SearchFilters()))
    out += [(q.rstrip("?") + " now?", SearchFilters()) for q, _ in out[::6]]
    out += [(q.text, q.filters) for q in build_queries(info, 200) if q.filters != SearchFilters()]
    return out


def _digest(pack: Any) -> dict[str, Any]:
    """A pack as its items and size (readable when they differ) and a hash of everything."""
    dump = pack.model_dump(mode="json")
    canonical = json.dumps(dump, sort_keys=True, separators=(",", ":"))
    return {
        "query": dump["query"],
        "budget": dump["token_budget"],
        "items": [str(i["memory_id"])[:8] for i in dump["items"]],
        "tokens_used": dump["tokens_used"],
        "sha256": hashlib.sha256((canonical + pack_text(pack)).encode()).hexdigest(),
    }


def test_packs_are_what_they_were_before_the_speed_work(
    db_url: str, reader_url: str, embedder: Any
) -> None:
    info = load_corpus(db_url, 300)
    queries = _queries(info)
    got = []
    with connect(reader_url, autocommit=True) as reader:
        for text, filters in queries:
            for budget in BUDGETS:
                pack = context(
                    reader, text, budget, embedder=embedder, filters=filters, now=CORPUS_END
                )
                got.append(_digest(pack))
    if os.environ.get("MEMORY_PACK_SNAPSHOT_WRITE") == "1":
        SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    # The reference has substance: most packs quote several memories, some fill their budget.
    assert sum(len(p["items"]) for p in expected) > len(expected) * 2
    assert any(p["tokens_used"] > 0.8 * p["budget"] for p in expected)
    for want, have in zip(expected, got, strict=True):
        assert have == want, (want["query"], want["budget"])
