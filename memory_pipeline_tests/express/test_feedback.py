"""Each feedback verb changes the next briefing as documented, through the real CLI."""

from __future__ import annotations

import pytest

from memory_pipeline.express.briefing import make_briefing
from memory_pipeline.express.store import load_briefing
from memory_pipeline_tests.express.rows import DAY, HOUR, edge
from memory_pipeline_tests.support.memories import NOW, add_memory


def order(conn) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    make_briefing(conn, DAY, digest_weekday="sunday", now=NOW + HOUR)
    stored = load_briefing(conn, DAY)
    assert stored is not None
    return [(i.kind, i.topic) for i in stored.items]


def item_id(conn, topic: str) -> int:  # type: ignore[no-untyped-def]
    stored = load_briefing(conn, DAY)
    assert stored is not None
    return next(i.id for i in stored.items if i.topic == topic)


@pytest.fixture
def news(conn) -> None:  # type: ignore[no-untyped-def]
    """A contradiction in `auth` and two open questions, `api` (deeper) before `ops`."""
    older = add_memory(conn, "Sessions in Redis", "x", project="auth")
    newer = add_memory(conn, "Sessions in Postgres", "x", project="auth")
    edge(conn, newer, older, "contradicts")
    add_memory(
        conn, "Rate limits in Postgres?", "x", type="question", project="api", depth_score=0.9
    )
    add_memory(conn, "Deploy on Fridays?", "x", type="question", project="ops", depth_score=0.1)


def test_mute_and_unmute_a_kind_and_a_topic(conn, news, cli_env, cli) -> None:  # type: ignore[no-untyped-def]
    assert order(conn) == [("contradiction", "auth"), ("question", "api"), ("question", "ops")]
    code, _, err = cli("brief", "--mute", "question")
    assert code == 0 and "left out" in err
    assert order(conn) == [("contradiction", "auth")]
    stored = load_briefing(conn, DAY)
    assert stored is not None
    assert {(f.kind, f.topic, f.rule) for f in stored.filtered} == {
        ("question", "api", "kind:question"),
        ("question", "ops", "kind:question"),
    }
    assert cli("brief", "--mute", "  AUTH ")[0] == 0  # a topic, any case and spacing
    assert order(conn) == []
    assert cli("brief", "--unmute", "question")[0] == 0
    assert order(conn) == [("question", "api"), ("question", "ops")]
    assert cli("brief", "--unmute", "auth")[0] == 0
    assert order(conn)[0] == ("contradiction", "auth")


def test_useful_raises_an_items_topic_and_less_lowers_it(conn, news, cli_env, cli) -> None:  # type: ignore[no-untyped-def]
    order(conn)
    code, _, err = cli("brief", "--useful", str(item_id(conn, "ops")))
    assert code == 0 and "(question, ops)" in err
    assert order(conn) == [("contradiction", "auth"), ("question", "ops"), ("question", "api")]
    # The rating follows the finding, not the row: recomposing renumbered the items.
    code, _, _ = cli("brief", "--less", str(item_id(conn, "auth")))
    assert code == 0
    code, _, _ = cli("brief", "--less", str(item_id(conn, "auth")))
    assert order(conn) == [("question", "ops"), ("question", "api"), ("contradiction", "auth")]


def test_cli_prints_composes_and_refuses_bad_input(conn, news, cli_env, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("brief")
    assert code == 2 and err.strip() == (
        "error: no briefing yet; compose one with `memory-pipeline brief --compose`"
    )
    order(conn)
    code, out, _ = cli("brief")
    assert code == 0
    assert out.startswith(f"# Briefing for {DAY}")
    assert "“Sessions in Postgres” contradicts “Sessions in Redis”" in out
    code, _, err = cli("brief", "--useful", "999999")
    assert code == 2 and "no briefing item 999999" in err and "Traceback" not in err
    code, _, err = cli("brief", "--useful", "1", "--mute", "ops")
    assert code == 2 and "one of" in err
    code, _, err = cli("brief", "--compose")
    assert code == 0 and "composed the briefing for" in err and "editor offline" in err
