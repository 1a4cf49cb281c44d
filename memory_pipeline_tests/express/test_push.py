"""The gated push: should_push, a real mail to a local SMTP server, no second push, a broken
server failing only the push, and the Dagster steps with their metadata."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from email import message_from_bytes, policy

import dagster as dg
import pytest
from aiosmtpd.controller import Controller

from memory_pipeline.express import render
from memory_pipeline.express.briefing import make_briefing
from memory_pipeline.express.definitions import briefing, briefing_push
from memory_pipeline.express.models import StoredItem
from memory_pipeline.express.push import PushError, SmtpConfig, push_briefing, should_push
from memory_pipeline.express.resource import ExpressResource
from memory_pipeline.express.store import load_briefing
from memory_pipeline.resources import DatabaseResource
from memory_pipeline_tests.express.rows import DAY, HOUR, dream_memory, edge
from memory_pipeline_tests.support.memories import NOW, add_memory


def item(kind: str, key: str, cross: bool = False) -> StoredItem:
    return StoredItem(1, 1, kind, "t", "h", "", 1.0, cross, key, ())


@pytest.mark.parametrize(
    ("items", "pushed", "expected"),
    [
        ([], set(), False),
        ([item("synthesis", "s", cross=True)], set(), True),
        ([item("synthesis", "s", cross=True)], {"s"}, False),  # already pushed
        ([item("synthesis", "s", cross=False)], set(), False),  # one project: not enough
        ([item("contradiction", "c")], set(), True),
        ([item("contradiction", "c")], {"c"}, False),
        ([item("contradiction", "c"), item("synthesis", "s", cross=True)], {"c"}, True),
        (
            [
                item("superseded", "u"),
                item("resurfaced", "r"),
                item("digest", "d"),
                item("question", "q"),
            ],
            set(),
            False,
        ),
        ([item("question", "q"), item("contradiction", "c")], {"q"}, True),
    ],
)
def test_should_push_truth_table(items, pushed, expected) -> None:  # type: ignore[no-untyped-def]
    assert should_push(items, pushed)[0] is expected


@dataclass
class Inbox:
    """A local SMTP server (aiosmtpd) on 127.0.0.1 that keeps what it receives, or refuses."""

    refuse: bool = False
    received: list = field(default_factory=list)

    async def handle_DATA(self, server, session, envelope):  # type: ignore[no-untyped-def]
        if self.refuse:
            return "554 5.7.1 relay refused"
        self.received.append(envelope)
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def inbox() -> Iterator[tuple[Inbox, int]]:
    handler = Inbox()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


def smtp(port: int) -> SmtpConfig:
    config = SmtpConfig.from_values(
        "127.0.0.1", port, "none", None, "memory@example.test", "me@example.test, you@example.test"
    )
    assert config is not None
    return config


def news(conn) -> dict[str, str]:  # type: ignore[no-untyped-def]
    a = add_memory(conn, "Billing retries with jitter", "x", project="billing")
    b = add_memory(conn, "Search retries with jitter", "x", project="search")
    synthesis = dream_memory(
        conn, "Two services share one retry policy — and ünïcode", [a, b], True
    )
    question = add_memory(conn, "Should retries be capped <at 5>?", "x", type="question")
    make_briefing(conn, DAY, digest_weekday="sunday", now=NOW + HOUR)
    return {"synthesis": synthesis, "question": question, "a": a}


def test_mail_is_received_intact_and_never_twice(conn, inbox) -> None:  # type: ignore[no-untyped-def]
    handler, port = inbox
    ids = news(conn)
    outcome = push_briefing(conn, smtp(port), DAY)
    assert outcome.sent and outcome.items == 2 and "cross-project synthesis" in outcome.reason
    (envelope,) = handler.received
    assert envelope.mail_from == "memory@example.test"
    assert envelope.rcpt_tos == ["me@example.test", "you@example.test"]
    mail = message_from_bytes(envelope.content, policy=policy.default)
    stored = load_briefing(conn, DAY)
    assert stored is not None
    assert mail["Subject"] == render.subject(stored)
    # SMTP carries lines ending in CRLF; the text itself must arrive unchanged.
    plain = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")
    html = mail.get_body(("html",)).get_content().replace("\r\n", "\n")
    assert plain == render.plain(stored)
    assert html == render.html_page(stored)
    assert "Two services share one retry policy — and ünïcode" in plain
    assert "Should retries be capped &lt;at 5&gt;?" in html
    for memory in (ids["synthesis"], ids["question"], ids["a"]):  # every item links back
        assert f"memory:{memory}" in plain and f'href="memory:{memory}"' in html
    # The same items again: nothing new, nothing sent, even after recomposing the day.
    assert push_briefing(conn, smtp(port), DAY).sent is False
    make_briefing(conn, DAY, digest_weekday="sunday", now=NOW + HOUR)
    again = push_briefing(conn, smtp(port), DAY)
    assert (again.sent, again.reason) == (False, "nothing new since the last push")
    # A new contradiction the next day: only it (and other unpushed items) go out.
    older = add_memory(conn, "Retries: 3", "x", project="billing", created_at=NOW + 2 * HOUR)
    newer = add_memory(conn, "Retries: 5", "x", project="billing", created_at=NOW + 2 * HOUR)
    edge(conn, newer, older, "contradicts", at=NOW + 2 * HOUR)
    tomorrow = DAY + timedelta(days=1)
    make_briefing(conn, tomorrow, digest_weekday="sunday", now=NOW + timedelta(days=1))
    third = push_briefing(conn, smtp(port), tomorrow)
    assert third.sent and third.items == 1
    mail = message_from_bytes(handler.received[-1].content, policy=policy.default)
    assert "contradicts" in mail["Subject"]
    assert "Two services share" not in mail.get_body(("plain",)).get_content()
    sent = conn.execute(
        "SELECT status, item_count FROM express_pushes ORDER BY created_at"
    ).fetchall()
    assert sent == [("sent", 2), ("sent", 1)]


def test_broken_smtp_fails_the_push_and_keeps_the_briefing(conn, inbox) -> None:  # type: ignore[no-untyped-def]
    handler, port = inbox
    news(conn)
    handler.refuse = True
    with pytest.raises(PushError, match=r"answered 554 5\.7\.1 relay refused; the briefing is"):
        push_briefing(conn, smtp(port), DAY)
    closed = free_port()
    with pytest.raises(PushError, match=r"cannot send the briefing through 127\.0\.0\.1"):
        push_briefing(conn, smtp(closed), DAY)
    stored = load_briefing(conn, DAY)
    assert stored is not None and len(stored.items) == 2
    assert conn.execute("SELECT count(*) FROM express_pushed_items").fetchone() == (0,)
    assert [r[0] for r in conn.execute("SELECT status FROM express_pushes")] == [
        "failed",
        "failed",
    ]
    handler.refuse = False  # the server is back: the same items go out now
    assert push_briefing(conn, smtp(port), DAY).items == 2
    assert len(handler.received) == 1


def test_no_push_without_configuration_or_with_half_of_one(conn) -> None:  # type: ignore[no-untyped-def]
    news(conn)
    assert push_briefing(conn, None, DAY).sent is False
    assert SmtpConfig.from_values("smtp.example", None, "starttls", None, None, "") is None
    tls = SmtpConfig.from_values("smtp.example", None, "TLS", "me", None, "you@example.test")
    assert tls is not None and tls.port == 465 and tls.sender == "me"
    with pytest.raises(Exception, match="MEMORY_SMTP_SECURITY='ssl' is not one of"):
        SmtpConfig.from_values("smtp.example", None, "ssl", None, None, "you@example.test")
    auth = SmtpConfig.from_values("127.0.0.1", free_port(), "none", "me", None, "a@b.test")
    with pytest.raises(PushError, match="MEMORY_SMTP_PASSWORD is empty"):
        push_briefing(conn, auth, DAY, environ={})


def _metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, object]:
    (mat,) = result.asset_materializations_for_node(asset)
    return {k: v.value for k, v in mat.metadata.items()}


def test_dagster_steps_report_items_filtered_and_pushed(db_url, conn, inbox, dagster_home) -> None:  # type: ignore[no-untyped-def]
    handler, port = inbox
    news(conn)
    conn.execute(
        "INSERT INTO express_feedback (verb, target_kind, target)"
        " VALUES ('mute', 'kind', 'question')"
    )
    resources = {
        "db": DatabaseResource(url=db_url),
        "express": ExpressResource(
            smtp_host="127.0.0.1",
            smtp_port=port,
            smtp_security="none",
            smtp_to="me@example.test",
            digest_weekday="sunday",
        ),
    }
    instance = dg.DagsterInstance.get()
    result = dg.materialize(
        [briefing, briefing_push],
        resources=resources,
        partition_key=DAY.isoformat(),
        instance=instance,
    )
    assert result.success
    meta = _metadata(result, "briefing")
    assert meta["items"] == 1 and meta["filtered_by_feedback"] == 1
    assert meta["filtered"] == ["question / general (kind:question)"]
    assert meta["editor"] == "offline"
    pushed = _metadata(result, "briefing_push")
    assert pushed["pushed"] is True and pushed["items_sent"] == 1
    assert len(handler.received) == 1
    # A broken server fails the push step only; the briefing step and its rows stand.
    handler.refuse = True
    conn.execute("DELETE FROM express_pushed_items")
    failed = dg.materialize(
        [briefing, briefing_push],
        resources=resources,
        partition_key=DAY.isoformat(),
        instance=instance,
        raise_on_error=False,
    )
    assert not failed.success
    assert _metadata(failed, "briefing")["items"] == 1
    (failure,) = failed.get_step_failure_events()
    assert failure.step_key == "briefing_push"
    assert "554" in failure.step_failure_data.error.message  # type: ignore[union-attr]
    assert load_briefing(conn, DAY) is not None


def test_cli_push_and_formats(conn, inbox, cli_env, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    handler, port = inbox
    news(conn)
    code, _, err = cli("brief", "--push", "--day", DAY.isoformat())
    assert (code, err.strip()) == (
        0,
        "not pushed: no push configured (MEMORY_SMTP_HOST and MEMORY_SMTP_TO)",
    )
    for name, value in {
        "MEMORY_SMTP_HOST": "127.0.0.1",
        "MEMORY_SMTP_PORT": str(port),
        "MEMORY_SMTP_SECURITY": "none",
        "MEMORY_SMTP_TO": "me@example.test",
    }.items():
        monkeypatch.setenv(name, value)
    code, _, err = cli("brief", "--push")
    assert code == 0 and err.startswith("pushed: new cross-project synthesis (1)")
    assert len(handler.received) == 1
    handler.refuse = True
    conn.execute("DELETE FROM express_pushed_items")
    code, _, err = cli("brief", "--push")
    assert code == 2 and err.startswith("error: SMTP server 127.0.0.1:") and "Traceback" not in err
    code, out, _ = cli("brief", "--format", "html")
    assert code == 0 and out.startswith("<!DOCTYPE html>")
    code, out, _ = cli("brief", "--format", "plain", "--day", DAY.isoformat())
    assert code == 0 and out.startswith(f"Briefing for {DAY}\n")
    code, _, err = cli("brief", "--day", "30.11.2026")
    assert code == 2 and "write it as YYYY-MM-DD" in err
