"""The editors: Ollama's ranking and headlines (a local fake server), its fallback, and offline
headlines that read well."""

from __future__ import annotations

import json
from dataclasses import replace

from memory_pipeline import tuning
from memory_pipeline.express.briefing import EditorChoice, make_briefing
from memory_pipeline.express.edit_offline import fit, headline
from memory_pipeline.express.edit_ollama import EditorAnswer
from memory_pipeline.express.models import Candidate, LinkedMemory
from memory_pipeline.express.store import load_briefing
from memory_pipeline_tests.express.rows import DAY, HOUR, edge
from memory_pipeline_tests.support.fake_ollama import (
    DEFAULT_CHAT_MODEL,
    HttpError,
    running_fake_ollama,
)
from memory_pipeline_tests.support.memories import NOW, add_memory


def news(conn) -> None:  # type: ignore[no-untyped-def]
    older = add_memory(conn, "Sessions in Redis", "x", project="auth")
    newer = add_memory(conn, "Sessions in Postgres", "x", project="auth")
    edge(conn, newer, older, "contradicts")
    add_memory(conn, "Rate limits in Postgres?", "x", type="question", project="api")


def compose(conn, host: str):  # type: ignore[no-untyped-def]
    report = make_briefing(
        conn,
        DAY,
        editor=EditorChoice(DEFAULT_CHAT_MODEL, host, 5),
        digest_weekday="sunday",
        now=NOW + HOUR,
    )
    return report, load_briefing(conn, DAY)


def test_ollama_editor_ranks_and_writes_headlines(conn) -> None:  # type: ignore[no-untyped-def]
    news(conn)
    answer = {
        "items": [
            {"index": 1, "headline": "Decide whether rate limits belong in Postgres this week."},
            {"index": 0, "headline": "Session storage moved from Redis to Postgres."},
        ]
    }
    with running_fake_ollama() as fake:
        fake.script_chat(json.dumps(answer))
        report, stored = compose(conn, fake.host)
        (request,) = fake.chat_requests
    assert request.body["format"] == EditorAnswer.model_json_schema()
    assert "Sessions in Postgres" in request.body["messages"][1]["content"]
    assert report.editor == f"ollama:{DEFAULT_CHAT_MODEL}" and report.editor_note is None
    assert [(i.kind, i.headline) for i in stored.items] == [
        ("question", "Decide whether rate limits belong in Postgres this week."),
        ("contradiction", "Session storage moved from Redis to Postgres."),
    ]


def test_ollama_failures_fall_back_to_the_offline_editor(conn) -> None:  # type: ignore[no-untyped-def]
    news(conn)
    bad_answers = [
        HttpError(500, "model crashed"),
        '{"items": [{"index": 0, "headline": "Only one of two"}]}',
        '{"items": [{"index": 0, "headline": "{\\"raw\\": 1}"}, {"index": 1, "headline": "ok"}]}',
        "not json at all",
    ]
    with running_fake_ollama() as fake:
        for bad in bad_answers:
            fake.script_chat(bad)
            report, stored = compose(conn, fake.host)
            assert report.editor == "offline" and report.editor_note
            assert stored.items[0].headline == (
                "“Sessions in Postgres” contradicts “Sessions in Redis”"
            )
    with running_fake_ollama(chat_models=["other:7b"]) as fake:  # the model is not installed
        report, _ = compose(conn, fake.host)
    assert report.editor == "offline" and "not available" in (report.editor_note or "")


def test_offline_headlines_are_whole_sentences_within_the_limit() -> None:
    limit = tuning.EXPRESS_HEADLINE_MAX_CHARS
    short = "Use pgBackRest for the 40 GB database."
    assert fit(short) == short
    two = "Use pgBackRest for the 40 GB database. " + "It restores to any point in time. " * 5
    kept = fit(two)  # the leading whole sentences that fit
    assert kept == short + " It restores to any point in time." * 2
    assert len(kept) <= limit and two.startswith(kept)
    one_long = "word " * 60
    cut = fit(one_long)
    assert len(cut) <= limit and cut.endswith("…") and not cut.endswith(" …")
    assert fit("line one\n\n  line   two") == "line one line two"


def test_cross_project_headline_without_named_projects_reads_well() -> None:
    memory = LinkedMemory("m1", "Both services retry the same way", "subject")
    flagged = Candidate(
        "synthesis",
        "cross-project",
        (memory,),
        1.0,
        cross_project=True,
        facts={"title": memory.title, "projects": []},
    )
    assert headline(flagged) == "New cross-project insight: Both services retry the same way"
    named = replace(flagged, facts={"title": memory.title, "projects": ["api", "billing"]})
    assert headline(named) == (
        "New cross-project insight across api, billing: Both services retry the same way"
    )


def test_cut_text_never_leaves_a_quote_open() -> None:
    text = (
        'The decision of 2026-09-24 ("We\'ll use memmap2 for regular files. It is fast.") was '
        "reversed on 2026-10-01 because mmap raised SIGBUS when a log file was truncated."
    )
    cut = fit(text, 90)
    assert cut.count("(") == cut.count(")") and cut.count('"') % 2 == 0, cut
    assert len(cut) <= 90


def test_long_titles_keep_both_quotes_in_a_contradiction_headline() -> None:
    first = LinkedMemory(
        "a", "Go with buffered reads again and drop mmap, but keep the rest", "newer"
    )
    second = LinkedMemory("b", "Logslice takes 11s on the 2.3 GB access log, grep takes 2", "older")
    c = Candidate(
        "contradiction",
        "general",
        (first, second),
        1.0,
        facts={"first": first.title, "second": second.title},
    )
    line = headline(c)
    assert line.count("“") == 2 and line.count("”") == 2, line
    assert " contradicts “Logslice" in line and len(line) <= tuning.EXPRESS_HEADLINE_MAX_CHARS
