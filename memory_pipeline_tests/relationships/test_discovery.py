"""Relationship discovery on hand-made memories whose answer is known: structural edges,
near-duplicates, offline reversals, idempotence and expiry, and what serving shows of them.

Vectors are the real offline embedder's (embed_window with MiniLM), so the thresholds in
tuning/ are exercised as in production.
"""

from __future__ import annotations

from datetime import date, timedelta

import psycopg
import pytest

from memory_pipeline import tuning
from memory_pipeline.embedding.minilm import get_minilm
from memory_pipeline.embedding.spaces import LOCAL_SPACE
from memory_pipeline.embedding.store import embed_window
from memory_pipeline.entities.store import extract_window
from memory_pipeline.relationships.flags import memory_flags
from memory_pipeline.relationships.judge_offline import OfflineJudge
from memory_pipeline.relationships.store import discover_window
from memory_pipeline_tests.support.memories import NOW, add_memory, add_task, link
from serving.browse import memory_graph, read_memory
from serving.context_pack import context
from serving.models import SearchFilters
from serving.render import detail_text, graph_text, pack_text
from serving.search import QueryEmbedder, search

DAY = date(2026, 11, 1)
START, END = DAY, DAY + timedelta(days=1)

REDIS = (
    "Use Redis for the API rate limiter",
    "We'll use Redis for the API rate limiter: a fixed-window counter per API key is one INCR "
    "plus EXPIRE per request, and Redis already runs for Celery.",
)
POSTGRES = (
    "Drop Redis and keep API rate limits in Postgres",
    "Decision: we drop Redis for the API rate limiter and keep the limits in Postgres, a token "
    "bucket per API key, because evictions silently disabled the limiter counters.",
)
BACKUPS = (
    "Nightly restic backups of the photo share",
    "Restic backs up the photo share every night to the S3 bucket, keeping 30 daily snapshots.",
)


@pytest.fixture(scope="module")
def embedder() -> QueryEmbedder:
    e = QueryEmbedder("http://127.0.0.1:9")
    e.embed(LOCAL_SPACE, "warm up")
    return e


def decision(conn: psycopg.Connection, title: str, content: str, days_ago: int, **kw) -> str:
    """A decision distilled from a task of its own (provenance through a segment)."""
    mid = add_memory(
        conn,
        title,
        content,
        type="decision",
        partition_day=DAY,
        created_at=NOW - timedelta(days=days_ago),
        **kw,
    )
    task, turns = add_task(conn, turns=1)
    link(conn, mid, task, turns)
    return mid


def run(conn: psycopg.Connection):
    """The day's steps as the ingest job orders them: vectors, entities, then edges."""
    embed_window(conn, get_minilm(), START, END)
    extract_window(conn, START, END)
    return discover_window(conn, OfflineJudge(), START, END)


def edges(conn: psycopg.Connection, kind: str, live: bool = True) -> list[tuple]:
    cond = "expired_at IS NULL" if live else "expired_at IS NOT NULL"
    return conn.execute(
        "SELECT source_id::text, target_id::text, similarity, evidence, backend"
        f" FROM memory_relationships WHERE relation_type = %s AND {cond} ORDER BY 1, 2",
        [kind],
    ).fetchall()


def test_a_decision_is_derived_from_its_segment_and_related_to_its_neighbour(conn) -> None:
    old = decision(conn, *REDIS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    other = decision(conn, *BACKUPS, days_ago=5)
    report = run(conn)
    segment_of = dict(
        conn.execute(
            "SELECT p.memory_id::text, s.memory_id::text FROM memory_provenance p"
            " JOIN topic_segments s ON s.id = p.segment_id"
        ).fetchall()
    )
    derived = {(s, t) for s, t, *_ in edges(conn, "derived_from")}
    assert derived == {(m, segment_of[m]) for m in (old, new, other)}
    related = edges(conn, "related_to")
    # Symmetric: stored once, the smaller id first, with the cosine that justified it.
    assert [(s, t) for s, t, *_ in related] == [tuple(sorted([old, new]))]
    assert related[0][2] >= tuning.RELATED_MIN_SIMILARITY
    assert report.added["related_to"] == 1 and report.live["derived_from"] == 3


def test_offline_judge_finds_the_reversal_with_direction_and_evidence(conn) -> None:
    old = decision(conn, *REDIS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    # Names Redis only as what it is not about: no decision of Redis to reverse.
    decision(
        conn,
        "Celery broker stays on RabbitMQ",
        "We keep RabbitMQ as the Celery broker instead of Redis because of its delivery "
        "acknowledgements.",
        days_ago=10,
    )
    run(conn)
    contradicts = edges(conn, "contradicts")
    assert [(s, t) for s, t, *_ in contradicts] == [(new, old)]  # newer -> older, stored once
    evidence, backend = contradicts[0][3], contradicts[0][4]
    assert "redi" in evidence and "drop Redis" in evidence and backend == "offline-rules"


def test_a_decision_naming_an_alternative_reverses_nothing(conn) -> None:
    """Issue 34: "instead of a separate zfs_exporter" names an alternative nobody chose. An older
    memory of the same project that says "separate" (about something else) is no reversed
    choice: the two share no subject entity that the newer decision drops."""
    older = decision(
        conn,
        "Alert on failed pgBackRest backups from a separate rule file",
        "We'll alert on failed pgBackRest backups of the homelab Postgres with Prometheus rules "
        "kept in a separate rule file, deployed and updated with the other homelab alerts.",
        days_ago=30,
        project="homelab",
    )
    newer = decision(
        conn,
        "Use node_exporter's ZFS collector for the homelab pool alerts",
        "We'll use node_exporter's built-in ZFS collector plus a textfile collector for scrub "
        "results instead of a separate zfs_exporter: one service less to deploy and update "
        "on the homelab, and the pool alerts run as Prometheus rules.",
        days_ago=2,
        project="homelab",
    )
    run(conn)
    assert edges(conn, "contradicts") == []
    # They do share entities (their project, Prometheus): what the newer decision drops must be
    # one of them, and the dropped "separate" or zfs_exporter is none.
    shared = conn.execute(
        "SELECT e.name FROM memory_entities a JOIN memory_entities b USING (entity_id)"
        " JOIN entities e ON e.id = a.entity_id WHERE a.memory_id = %s AND b.memory_id = %s",
        [older, newer],
    ).fetchall()
    assert {n for (n,) in shared} == {"homelab", "prometheus"}


def test_a_reversal_needs_the_dropped_choice_to_be_an_entity_both_mention(conn) -> None:
    old = decision(conn, *REDIS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    run(conn)
    assert [(s, t) for s, t, *_ in edges(conn, "contradicts")] == [(new, old)]
    shared = conn.execute(
        "SELECT e.category, e.name FROM memory_entities a JOIN memory_entities b"
        " USING (entity_id) JOIN entities e ON e.id = a.entity_id"
        " WHERE a.memory_id = %s AND b.memory_id = %s ORDER BY 2",
        [old, new],
    ).fetchall()
    assert ("tool", "redis") in shared


def test_a_stored_reversal_with_no_shared_subject_is_expired_by_the_next_run(conn) -> None:
    """An edge an earlier version or another judge wrote, whose memories share no entity, stops
    holding at the next run even when neither memory is scanned again; history is kept."""
    old = decision(conn, *BACKUPS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    run(conn)
    conn.execute(
        "INSERT INTO memory_relationships (source_id, target_id, relation_type, backend)"
        " VALUES (%s, %s, 'contradicts', 'ollama:some-model')",
        [new, old],
    )
    again = run(conn)
    assert again.scanned == 0 and again.expired == {"contradicts": 1}
    assert [(s, t) for s, t, *_ in edges(conn, "contradicts", live=False)] == [(new, old)]
    assert run(conn).expired == {}  # and nothing more the time after


def test_rerun_adds_nothing_and_an_edge_that_stops_holding_is_expired(conn) -> None:
    old = decision(conn, *REDIS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    first = run(conn)
    assert first.added["contradicts"] == 1
    before = conn.execute("SELECT count(*) FROM memory_relationships").fetchone()
    second = run(conn)
    assert second.scanned == 0 and second.added == {} and second.expired == {}
    assert conn.execute("SELECT count(*) FROM memory_relationships").fetchone() == before
    # The newer decision is rewritten: it no longer reverses Redis, nor is it about limits.
    conn.execute("UPDATE memories SET title = %s, content = %s WHERE id = %s", [*BACKUPS, new])
    third = run(conn)
    assert third.scanned == 1
    assert edges(conn, "contradicts") == [] and edges(conn, "related_to") == []
    expired = {(s, t) for s, t, *_ in edges(conn, "contradicts", live=False)}
    assert expired == {(new, old)}  # kept, with expired_at: history is never deleted
    assert third.expired["contradicts"] == 1 and third.expired["related_to"] == 1


def test_near_duplicates_fold_into_the_first_observation_with_every_provenance(
    conn, reader, embedder
) -> None:
    text = (
        "Keep Postgres out of the k3s cluster",
        "Decision: Postgres stays on its own VM outside the k3s cluster, because a database "
        "behind Longhorn volumes made every node drain risky.",
    )
    first = decision(conn, *text, days_ago=20)
    second = decision(conn, text[0], text[1] + " ", days_ago=10)
    third = decision(conn, "Keep Postgres out of k3s", text[1].replace("Decision: ", ""), 3)
    # Close in vector space but saying the opposite: not a duplicate.
    opposite = decision(
        conn,
        "Move Postgres into the k3s cluster",
        "Decision: Postgres moves into the k3s cluster on Longhorn volumes, because node drains "
        "are now rehearsed and the VM costs a host.",
        days_ago=1,
    )
    run(conn)
    dups = {(s, t) for s, t, *_ in edges(conn, "duplicate_of")}
    assert dups == {(second, first), (third, first)}
    rows = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT id::text, observation_count, duplicate_of::text FROM memories"
            " WHERE id = ANY(%s::uuid[])",
            [[first, second, third, opposite]],
        ).fetchall()
    }
    assert rows[first] == (3, None) and rows[second] == (1, first) and rows[third] == (1, first)
    assert rows[opposite] == (1, None)

    hits = search(reader, "postgres outside the k3s cluster", embedder=embedder).results
    shown = [h for h in hits if str(h.id) in {first, second, third}]
    assert [(str(h.id), h.observation_count) for h in shown] == [(first, 3)]
    all_hits = search(
        reader,
        "postgres outside the k3s cluster",
        embedder=embedder,
        filters=SearchFilters(include_duplicates=True),
    ).results
    # (search's exact-content dedup still folds `first` and `second`: the same text)
    shown_all = {str(h.id) for h in all_hits}
    assert third in shown_all and len({first, second} & shown_all) == 1

    # Every observation's provenance stays reachable from the kept memory.
    kept = read_memory(reader, first)
    copies = [r.other_id for r in kept.relationships if r.relation_type == "duplicate_of"]
    assert sorted(map(str, copies)) == sorted([second, third])
    assert all(
        r.direction == "incoming" for r in kept.relationships if r.relation_type == "duplicate_of"
    )
    tasks = {p.task_id for c in [first, *copies] for p in read_memory(reader, c).provenance}
    assert len(tasks) == 3
    assert "observed: 3 times" in detail_text(kept)


def test_serving_shows_edges_and_packs_flag_a_reversed_decision(conn, reader, embedder) -> None:
    old = decision(conn, *REDIS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    run(conn)
    detail = read_memory(reader, old)
    edge = next(r for r in detail.relationships if r.relation_type == "contradicts")
    assert (edge.direction, str(edge.other_id)) == ("incoming", new)
    assert edge.evidence and "drop Redis" in edge.evidence and edge.similarity
    text = detail_text(detail)
    assert f"incoming contradicts <- {new}" in text and "found today" in text
    graph = memory_graph(reader, new)
    assert any(e.relation_type == "contradicts" and e.evidence for e in graph.edges)
    assert f"{new} --contradicts--> {old}" in graph_text(graph)

    flags = memory_flags(reader, [old, new])
    assert flags[old][0].startswith(f"reversed by a newer decision {new}")
    assert flags[new][0].startswith(f"contradicts an older decision {old}")
    pack = context(reader, "API rate limiter redis", 2000, embedder=embedder)
    by_id = {str(i.memory_id): i for i in pack.items}
    assert by_id[old].flags == flags[old]
    assert f"flag: reversed by a newer decision {new}" in pack_text(pack)
    # Asked to, search leaves out what a newer decision reversed.
    plain = {str(h.id) for h in search(reader, "API rate limiter", embedder=embedder).results}
    assert old in plain
    current = search(
        reader,
        "API rate limiter",
        embedder=embedder,
        filters=SearchFilters(exclude_reversed=True),
    ).results
    assert old not in {str(h.id) for h in current} and new in {str(h.id) for h in current}


def test_flags_are_capped_at_two_most_urgent_first(conn, reader) -> None:
    old = add_memory(conn, *REDIS, type="decision", created_at=NOW - timedelta(days=40))
    newer = [
        add_memory(
            conn,
            f"reversal {i}",
            POSTGRES[1],
            type="decision",
            created_at=NOW - timedelta(days=10 - i),
        )
        for i in range(3)
    ]
    for n in newer:
        conn.execute(
            "INSERT INTO memory_relationships (source_id, target_id, relation_type)"
            " VALUES (%s, %s, 'contradicts')",
            [n, old],
        )
    flags = memory_flags(reader, [old])[old]
    assert len(flags) == tuning.PACK_MAX_FLAGS
    assert newer[2] in flags[0] and newer[1] in flags[1]  # the newest reversal first


def test_a_reversed_choice_recorded_only_in_a_segment_is_found_and_kept(conn) -> None:
    from memory_pipeline_tests.support.segments import add_segment

    turns = [
        ("set up the meter ingestion job", "Done: the loader parses the utility CSV files."),
        (
            "perfect. schedule the nightly load for 02:30",
            "Installed a cron entry for the nightly load at 02:30; logs go to logs/ingest.log.",
        ),
    ]
    old, _ = add_segment(
        conn,
        turns,
        native_id="design",
        title="Meter ingestion",
        partition_day=DAY,
        created_at=NOW - timedelta(days=40),
    )
    new = decision(
        conn,
        "Use a systemd timer instead of cron for the nightly load",
        "We'll use a systemd timer instead of cron for the nightly load, because a cron job "
        "missed while the machine is down is skipped; Persistent=true runs it at the next boot.",
        days_ago=10,
    )
    run(conn)
    assert [(s, t) for s, t, *_ in edges(conn, "contradicts")] == [(new, old)]
    # The old segment grows (a later turn): it is scanned again, the reversal still holds.
    conn.execute(
        "UPDATE memories SET content = content || %s WHERE id = %s",
        ["\n\nMara: and the logs?\nJonas: Rotated weekly.", old],
    )
    again = run(conn)
    assert again.scanned == 1 and again.expired.get("contradicts", 0) == 0
    assert [(s, t) for s, t, *_ in edges(conn, "contradicts")] == [(new, old)]


def test_eval_prints_precision_and_recall_per_edge_type(
    conn, db_url, reader_url, tmp_path, monkeypatch
) -> None:
    import json

    from typer.testing import CliRunner

    from memory_pipeline.cli import app

    old = decision(conn, *REDIS, days_ago=30)
    new = decision(conn, *POSTGRES, days_ago=2)
    run(conn)
    ref = {
        mid: {"source": s, "native_task_id": n, "turn_ordinal": o}
        for mid, s, n, o in conn.execute(
            "SELECT p.memory_id::text, t.source, t.native_id, a.ordinal FROM memory_provenance p"
            " JOIN captured_tasks t ON t.id = p.task_id JOIN agent_turns a ON a.id = p.turn_id"
        ).fetchall()
    }
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q1", "query": "rate limiter", "relevant": [ref[old]]}))
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"id": "c1", "relation": "contradicts", "source": ref[new], "target": ref[old]})
        + "\n"
        + json.dumps(
            {
                "id": "c2",
                "relation": "contradicts",
                "source": ref[old],
                "target": ref[new],
                "linked": False,
            }
        )
    )
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("MEMORY_READER_URL", reader_url)
    result = CliRunner().invoke(
        app,
        ["eval", "--no-evidence", "--gold", str(gold), "--relationships-gold", str(pairs)],
    )
    assert result.exit_code == 0, result.output
    assert "| contradicts | offline-rules | 1 | 1 | 1.000 | 1 | 1.000 | 0 |" in result.output


def test_the_ingest_job_finds_entities_before_it_links() -> None:
    """A reversal needs a subject entity both memories mention: in the ingest job (one process,
    steps in dependency order) the entity mentions are written before the edges are judged."""
    import dagster as dg

    from memory_pipeline.relationships.definitions import memory_relationships

    assert dg.AssetKey("memory_entities") in memory_relationships.dependency_keys


def test_a_phrasal_verb_is_no_reversal_cue() -> None:
    """Issue 34: "dropped off that stuff I baked" dropped nothing; "drop Redis" does."""
    from memory_pipeline.relationships.judge_offline import reversed_terms

    for said in (
        "I dropped off that stuff I baked at Ruth's.",
        "Can you drop by the shop on Sunday?",
        "He dropped out of the league.",
    ):
        assert reversed_terms(said) == [], said
    assert reversed_terms("We drop Redis for rate limiting.") != []


def test_an_alternative_named_in_passing_was_never_chosen() -> None:
    """Issue 34: "dropped Grafana Cloud for Better Stack" changes nothing in a session that only
    named Grafana as what it avoided; it reverses one that set Grafana up."""
    from memory_pipeline.relationships.judge_offline import affirms

    passing = (
        "Then consider Beszel: a hub plus a tiny agent per host, alerts built in. Far less to "
        "maintain than Prometheus, node_exporter, Grafana and Alertmanager."
    )
    assert not affirms(passing, "grafana")
    assert not affirms("We keep the counters without Redis.", "redi")
    assert affirms("Set up Grafana Cloud with Sentry for errors.", "grafana")
    assert affirms("We'll use Redis for the rate limiter: you already run Redis 7.", "redi")
