"""Where a context pack loses gold evidence (a diagnostic, not a test).

For each gold query it builds the pack at 1,000 and 2,000 tokens, as `memory-pipeline eval`
does, and for every evidence message missing at 1,000 says why: `not_in_hits` (no hit's
provenance holds it), `not_matched_passage` (a hit holds it but not as a matched passage),
`matched_not_packed` (a matched passage the budget did not reach) or
`memory_packed_other_passage` (its memory is in the pack, another passage of it was quoted);
`_partial` when 30% or more of its words are in the pack anyway. It also prints what the packs
at 1,000 are made of (matched and neighbouring excerpts, and the title/provenance overhead), and
the evidence found per question kind. Run it on a home where the gold set's corpus is imported:

    MEMORY_HOME=<home> .venv/bin/python scripts/profile_pack.py <gold.jsonl> <per_query.json> [-v]
"""

import collections
import json
import sys
import time
from pathlib import Path

from memory_pipeline import tuning
from memory_pipeline.settings import Settings
from serving.context_pack import context
from serving.db import connect_reader
from serving.evaluation import EvidenceIndex, found_in, load_gold, load_messages
from serving.render import pack_item_text
from serving.search import QueryEmbedder, search
from serving.text import tokens

gold = load_gold(Path(sys.argv[1]))
out_path = sys.argv[2]
verbose = "-v" in sys.argv
emb = QueryEmbedder(Settings.from_env().ollama_host)
reasons = collections.Counter()
by_kind = collections.defaultdict(lambda: collections.defaultdict(float))
n_kind = collections.Counter()
chars = collections.Counter()
items_n = collections.Counter()
per_query = {}
t0 = time.time()
with connect_reader() as conn:
    messages, turn_of = load_messages(conn)
    index = EvidenceIndex(messages)
    for q in gold:
        n_kind[q.kind] += 1
        per_query[q.id] = {}
        for budget in (1000, 2000):
            pack = context(conn, q.query, budget, embedder=emb)
            text = "\n".join(pack_item_text(i) for i in pack.items)
            words = tokens(text)
            if budget == 1000:
                items_n["items"] += len(pack.items)
                for item in pack.items:
                    full = pack_item_text(item)
                    body = 0
                    for e in item.excerpts:
                        k = ("neighbour" if e.neighbour else "match") + "/" + item.kind
                        chars[k] += len(e.text)
                        body += len(e.text)
                    chars["overhead"] += len(full) - body
                seen_turns = collections.Counter(
                    (e.native_task_id, t.ordinal)
                    for item in pack.items
                    for e in item.excerpts
                    for t in e.turns
                )
                items_n["dup_turn_refs"] += sum(v - 1 for v in seen_turns.values())
            found = 0.0
            resp = None
            for item in q.relevant:
                ev = index.text(item, turn_of)
                if ev and found_in(ev, words, text):
                    found += 1 / len(q.relevant)
                    continue
                if budget != 1000:
                    continue
                if resp is None:
                    resp = search(
                        conn,
                        q.query,
                        embedder=emb,
                        limit=tuning.MAX_LIMIT,
                        temporal_context=False,
                        passages_per_hit=tuning.PACK_PASSAGES_PER_HIT,
                        near_passages=True,
                    )
                ordinal = turn_of.get((item.source, item.native_task_id, item.native_message_id))
                where = None
                for r, h in enumerate(resp.results):
                    for p in h.passages:
                        if p.native_task_id == item.native_task_id and any(
                            t.ordinal == ordinal for t in p.turns
                        ):
                            where = (r, h.type, p.bm25_rank, p.vector_rank)
                            break
                    if where:
                        break
                in_prov = next(
                    (
                        r
                        for r, h in enumerate(resp.results)
                        if any(
                            c.native_task_id == item.native_task_id
                            and any(t.ordinal == ordinal for t in c.turns)
                            for c in h.provenance
                        )
                    ),
                    None,
                )
                share = len(tokens(ev) & words) / max(len(tokens(ev)), 1) if ev else 0
                if where is None:
                    reason = "not_matched_passage" if in_prov is not None else "not_in_hits"
                else:
                    packed_mem = any(
                        str(i.memory_id) == str(resp.results[where[0]].id) for i in pack.items
                    )
                    reason = "memory_packed_other_passage" if packed_mem else "matched_not_packed"
                    if share > 0.3:
                        reason += "_partial"
                reasons[reason] += 1
                if verbose:
                    print(
                        f"{q.id} [{q.kind}] {reason} where={where} prov={in_prov} share={share:.2f}"
                    )
                    print("   Q:", q.query)
                    print("   E:", (ev or "")[:160].replace("\n", " | "))
            by_kind[q.kind][budget] += found
            per_query[q.id][budget] = found
tot = sum(chars.values())
print("time", round(time.time() - t0), "s")
print("pack@1000 composition (chars):", {k: f"{v} ({v / tot:.0%})" for k, v in chars.items()})
print("items per pack", items_n["items"] / len(gold), "dup turn refs", items_n["dup_turn_refs"])
print("misses@1000:", dict(reasons))
for k in sorted(n_kind):
    at = {b: by_kind[k][b] / n_kind[k] for b in (1000, 2000)}
    print(f"  {k:<25} n={n_kind[k]:<4} @1000 {at[1000]:.3f}  @2000 {at[2000]:.3f}")
for b in (1000, 2000):
    print(f"overall pack@{b}", round(sum(v[b] for v in by_kind.values()) / len(gold), 4))
Path(out_path).write_text(json.dumps(per_query))
