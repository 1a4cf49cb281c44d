"""Step 4: what each hit rests on: its provenance chains and the passages that matched it, with
their turn ordinals and native ids."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from memory_pipeline import tuning
from memory_pipeline.models.provenance import Provenance, TurnRef
from serving.models import PassageMatch, PassageTurn
from serving.rerank import rrf_scores
from serving.search.channel import ChannelResult

# Rows of each memory's provenance (one parameter: the memory ids), read by `chains_of`.
PROVENANCE_SQL = (
    "SELECT p.memory_id, p.task_id, t.source, t.native_id, t.title, p.segment_id,"
    " a.ordinal, a.native_turn_id, a.native_message_ids, p.role"
    " FROM memory_provenance p JOIN captured_tasks t ON t.id = p.task_id"
    " JOIN agent_turns a ON a.id = p.turn_id"
    " WHERE p.memory_id = ANY(%s::uuid[]) ORDER BY p.memory_id, p.segment_id, a.ordinal"
)


def provenance(conn: psycopg.Connection, memory_ids: Sequence[str]) -> dict[str, list[Provenance]]:
    """memory id -> its provenance chains (task, native task id, segment, turns)."""
    return chains_of(conn.execute(PROVENANCE_SQL, [list(memory_ids)]).fetchall())


def chains_of(rows: Iterable[Sequence[Any]]) -> dict[str, list[Provenance]]:
    """Provenance chains by memory id from PROVENANCE_SQL's rows."""
    chains: dict[str, dict[tuple[str, str], Provenance]] = {}
    for mid, task_id, source, native_id, title, seg_id, ordinal, turn_id, msg_ids, role in rows:
        by_seg = chains.setdefault(str(mid), {})
        key = (str(task_id), str(seg_id))
        if key not in by_seg:
            by_seg[key] = Provenance(
                task_id=task_id,
                source=source,
                native_task_id=native_id,
                task_title=title,
                segment_id=seg_id,
                turns=[],
            )
        by_seg[key].turns.append(
            TurnRef(
                ordinal=ordinal, native_turn_id=turn_id, native_message_ids=list(msg_ids), role=role
            )
        )
    return {mid: list(v.values()) for mid, v in chains.items()}


def matched_passages(
    conn: psycopg.Connection,
    bm25: ChannelResult,
    vec: ChannelResult,
    memory_ids: set[str],
    *,
    per_hit: int = tuning.MATCHED_PASSAGES_PER_HIT,
    nearest_only: bool = True,
) -> dict[str, list[PassageMatch]]:
    """memory id -> the passages that matched it, best first (RRF of their passage ranks), at
    most MATCHED_PASSAGES_PER_HIT, with turn ordinals and native ids.

    A passage matched when it holds a query lexeme (BM25 ranked it) or is the memory's nearest
    passage to the query. Every passage has some cosine to the query, so the vector channel's
    further passages of a memory are not matches.
    """
    choice = MatchedChoice.of(bm25, vec, memory_ids, per_hit=per_hit, nearest_only=nearest_only)
    return choice.matched(passage_details(conn, choice.wanted))


@dataclass(frozen=True)
class MatchedChoice:
    """Which passages matched each memory (best first) and their channel ranks, before their
    details are read (`wanted`; search reads them in the round trip of the provenance)."""

    by_memory: dict[str, list[str]]
    ranks: dict[str, dict[str, int]]

    @property
    def wanted(self) -> list[str]:
        return [p for chosen in self.by_memory.values() for p in chosen]

    @staticmethod
    def of(
        bm25: ChannelResult,
        vec: ChannelResult,
        memory_ids: set[str],
        *,
        per_hit: int = tuning.MATCHED_PASSAGES_PER_HIT,
        nearest_only: bool = True,
    ) -> MatchedChoice:
        ranks, by_memory = _choose(bm25, vec, memory_ids, per_hit, nearest_only)
        return MatchedChoice(by_memory, ranks)

    def matched(self, details: dict[str, PassageMatch]) -> dict[str, list[PassageMatch]]:
        """memory id -> its matched passages with their ranks, from the passages' details."""
        ranks = self.ranks
        return {
            mid: [
                details[p].model_copy(
                    update={
                        "bm25_rank": ranks[p].get("bm25"),
                        "vector_rank": ranks[p].get("vector"),
                    }
                )
                for p in chosen
                if p in details
            ]
            for mid, chosen in self.by_memory.items()
        }


def _choose(
    bm25: ChannelResult,
    vec: ChannelResult,
    memory_ids: set[str],
    per_hit: int,
    nearest_only: bool,
) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    ranks: dict[str, dict[str, int]] = {}
    owner: dict[str, str] = {}
    nearest: set[str] = set()
    for name, result in (("bm25", bm25), ("vector", vec)):
        for rank, (pid, mid) in enumerate(result.passages, start=1):
            if mid not in memory_ids:
                continue
            if name == "vector" and nearest_only:
                if mid in nearest:
                    continue
                nearest.add(mid)
            ranks.setdefault(pid, {})[name] = rank
            owner[pid] = mid
    fused = rrf_scores(
        [p for p, _ in bm25.passages if p in ranks], [p for p, _ in vec.passages if p in ranks]
    )
    by_memory: dict[str, list[str]] = {}
    for pid in sorted(ranks, key=lambda p: (-fused[p], p)):
        chosen = by_memory.setdefault(owner[pid], [])
        if len(chosen) < per_hit:
            chosen.append(pid)
    return ranks, by_memory


def passage_details(
    conn: psycopg.Connection, passage_ids: Sequence[str]
) -> dict[str, PassageMatch]:
    """Passage id -> its text and the turns it quotes or rests on (ordinals, native ids)."""
    if not passage_ids:
        return {}
    return collect_passages(conn.execute(PASSAGE_DETAILS_SQL, [list(passage_ids)]).fetchall())


# Rows of passages with their turns (one parameter: the passage ids), read by collect_passages.
PASSAGE_DETAILS_SQL = (
    "SELECT p.id, p.memory_id, p.ordinal, p.text, t.source, t.native_id, a.ordinal,"
    " a.native_turn_id, a.native_message_ids"
    " FROM memory_passages p"
    " LEFT JOIN LATERAL unnest(p.turn_ids) WITH ORDINALITY AS u(turn_id, n) ON true"
    " LEFT JOIN agent_turns a ON a.id = u.turn_id"
    " LEFT JOIN captured_tasks t ON t.id = a.task_id"
    " WHERE p.id = ANY(%s::uuid[]) ORDER BY p.id, u.n"
)


def collect_passages(rows: Iterable[Sequence[Any]]) -> dict[str, PassageMatch]:
    """Passages from rows of (id, memory id, ordinal, text, source, native task id, turn ordinal,
    native turn id, native message ids), a passage's rows together and its turns in order."""
    out: dict[str, PassageMatch] = {}
    for pid, mid, ordinal, text, source, native_id, turn_ordinal, turn_id, msg_ids in rows:
        match = out.get(str(pid))
        if match is None:
            match = out[str(pid)] = PassageMatch(
                id=pid,
                memory_id=mid,
                ordinal=ordinal,
                text=text,
                source=source,
                native_task_id=native_id,
                turns=[],
            )
        if turn_ordinal is not None:
            match.turns.append(
                PassageTurn(
                    ordinal=turn_ordinal,
                    native_turn_id=turn_id,
                    native_message_ids=list(msg_ids or []),
                )
            )
    return out
