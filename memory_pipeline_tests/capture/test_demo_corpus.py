"""The bundled demo corpus: reproducible from its spec, and parsed cleanly by every connector."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memory_pipeline.capture.models import ParsedTask, ParseIssue
from memory_pipeline.capture.sources import demo_roots
from memory_pipeline.demo import build_corpus
from memory_pipeline.demo.conversations.homelab import (
    FAKE_AWS_ACCESS_KEY_ID,
    FAKE_AWS_SECRET_ACCESS_KEY,
)
from memory_pipeline.demo.conversations.ledgerline import FAKE_DATABASE_URL
from memory_pipeline.demo.conversations.logslice import FAKE_GITHUB_TOKEN
from memory_pipeline.demo.conversations.meterflow import FAKE_OPENAI_KEY

CORPUS = build_corpus.CORPUS_DIR
GOLD = build_corpus.GOLD_PATH


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, build_corpus.Manifest]:
    out = tmp_path_factory.mktemp("demo")
    manifest = build_corpus.build(out / "corpus", out / "gold.jsonl")
    return out, manifest


@pytest.fixture(scope="module")
def manifest(generated) -> build_corpus.Manifest:
    return generated[1]


def _connectors():
    """Every registered source's connector on its demo roots (models/sources.py)."""
    return demo_roots().connectors()


@pytest.fixture(scope="module")
def parsed() -> tuple[dict[tuple[str, str], ParsedTask], list[ParseIssue]]:
    tasks: dict[tuple[str, str], ParsedTask] = {}
    issues: list[ParseIssue] = []
    for connector in _connectors():
        for path in connector.discover():
            result = connector.parse(path)
            issues += result.issues
            for task in result.tasks:
                key = (task.source, task.native_id)
                assert key not in tasks, f"two tasks with the identity {key}"
                tasks[key] = task
    return tasks, issues


@pytest.fixture(scope="module")
def tasks(parsed) -> dict[tuple[str, str], ParsedTask]:
    return parsed[0]


def _task(tasks, manifest, spec_key: str) -> ParsedTask:
    info = manifest.task(spec_key)
    return tasks[(info.source, info.native_id)]


# -- the generator ------------------------------------------------------------------------------


def test_generator_reproduces_the_committed_corpus_byte_for_byte(generated) -> None:
    out, _ = generated
    assert _files(out / "corpus") == _files(CORPUS)
    assert (out / "gold.jsonl").read_bytes() == GOLD.read_bytes()


def test_corpus_size_and_planted_content(manifest) -> None:
    assert 30 <= len(manifest.tasks) <= 60  # grows with each connector's few demo sessions
    complete = sum(t.complete_turns for t in manifest.tasks if t.ownership == "user_owned")
    assert 150 <= complete <= 250
    assert len({t.project for t in manifest.tasks}) == 4
    assert manifest.plants["decision"] >= 12
    assert manifest.plants["insight"] >= 10
    assert manifest.plants["correction"] >= 4
    assert manifest.plants["secret"] >= 4
    assert manifest.plants["topic_switch"] >= 3
    assert manifest.plants["cross_project"] >= 2
    assert manifest.plants["contradiction"] >= 2


# -- parsing --------------------------------------------------------------------------------------


def test_no_parse_issues(parsed) -> None:
    _, issues = parsed
    assert issues == []


def test_task_days_agree_with_parsed_start_days() -> None:
    for connector in _connectors():
        for path in connector.discover():
            started = {t.started_at.date() for t in connector.parse(path).tasks}
            assert connector.task_days(path) == started, path


def test_every_connector_finds_every_task(tasks, manifest) -> None:
    expected = {(t.source, t.native_id) for t in manifest.tasks}
    assert set(tasks) == expected


def test_tasks_per_source_and_ownership(tasks, manifest) -> None:
    got = Counter((t.source, t.ownership.ownership) for t in tasks.values())
    assert got == Counter((t.source, t.ownership) for t in manifest.tasks)
    assert got == {
        ("codex", "user_owned"): 16,
        ("codex", "delegated"): 2,
        ("claude_code", "user_owned"): 14,
        ("claude_code", "delegated"): 2,
        ("chat_import", "user_owned"): 4,
        ("opencode", "user_owned"): 1,
        ("opencode", "delegated"): 1,
        ("aider", "user_owned"): 1,
        ("aider", "delegated"): 1,
        ("kiro_cli", "user_owned"): 2,
        ("kiro_cli", "delegated"): 1,
        ("kiro_ide", "user_owned"): 2,
        ("cursor", "user_owned"): 3,
        ("gemini_cli", "user_owned"): 1,
        ("gemini_cli", "delegated"): 1,
    }


def test_delegated_tasks_have_the_right_reasons(tasks, manifest) -> None:
    reasons = {}
    for info in manifest.tasks:
        if info.ownership == "delegated":
            task = tasks[(info.source, info.native_id)]
            assert task.ownership.ownership == "delegated"
            reasons[(info.source, info.delegation)] = task.ownership
    assert set(reasons) == {
        ("codex", "exec"),
        ("codex", "subagent"),
        ("claude_code", "subagent"),
        ("claude_code", "sdk"),
        ("opencode", "subagent"),
        ("aider", "exec"),
        ("kiro_cli", "subagent"),
        ("gemini_cli", "exec"),
    }
    assert reasons[("opencode", "subagent")].reason == "opencode:child-session"
    assert reasons[("aider", "exec")].reason == "aider:scripted-message"
    assert reasons[("kiro_cli", "subagent")].reason == "kiro_cli:subagent"
    assert reasons[("gemini_cli", "exec")].reason == "gemini_cli:non-interactive"
    assert reasons[("codex", "exec")].reason == "codex:exec"
    assert reasons[("codex", "subagent")].reason.startswith("codex:subagent")
    assert reasons[("codex", "subagent")].evidence["thread_source"] == "subagent"
    assert reasons[("claude_code", "sdk")].reason == "claude_code:sdk-entrypoint"
    assert reasons[("claude_code", "subagent")].reason in {
        "claude_code:subagent",
        "claude_code:sidechain",
    }


def test_user_owned_sessions_are_interactive(tasks) -> None:
    reasons = Counter(
        t.ownership.reason for t in tasks.values() if t.ownership.ownership == "user_owned"
    )
    assert reasons == {
        "codex:interactive-cli": 16,
        "claude_code:typed-prompt": 14,
        "chat_import:user-import": 4,
        "opencode:typed-prompt": 1,
        "aider:interactive-chat": 1,
        "kiro_cli:typed-prompt": 2,
        "kiro_ide:chat": 2,
        "cursor:typed-prompt": 2,
        "cursor:cli-prompt-history": 1,
        "gemini_cli:typed-prompt": 1,
    }


def test_turns_match_the_spec(tasks, manifest) -> None:
    sessions = {s.key: s for s in build_corpus.SESSIONS}
    chats = {c.key: c for c in build_corpus.CHATS}
    for info in manifest.tasks:
        task = tasks[(info.source, info.native_id)]
        assert len(task.turns) == info.complete_turns, info.spec_key
        assert [t.ordinal for t in task.turns] == list(range(len(task.turns)))
        assert task.unfinished_turn == info.unfinished, info.spec_key
        if info.spec_key in sessions:
            expected = [(t.prompt, t.answer) for t in sessions[info.spec_key].turns if t.complete]
        elif info.spec_key in chats:
            expected = [
                ("\n\n".join(m.text for m in t.prompt), "\n\n".join(m.text for m in t.outcome))
                for t in chats[info.spec_key].turns
            ]
        else:  # a delegated subagent: its prompt is the parent's delegation
            continue
        assert [(t.prompt, t.outcome) for t in task.turns] == expected, info.spec_key


def test_aborted_and_unfinished_turns_are_not_complete(tasks, manifest) -> None:
    perf = _task(tasks, manifest, "logslice-perf")
    assert len(perf.turns) == 6  # 7 prompts, one interrupted (turn_aborted)
    assert not perf.unfinished_turn
    backfill = _task(tasks, manifest, "meterflow-october-backfill")
    assert backfill.unfinished_turn
    assert len(backfill.turns) == 2


def test_injected_context_never_becomes_a_prompt(tasks) -> None:
    for task in tasks.values():
        for turn in task.turns:
            for marker in ("<environment_context>", "# AGENTS.md", "<turn_aborted>", "<INSTRUC"):
                assert marker not in turn.prompt, (task.native_id, turn.ordinal)
            assert "**Weighing the options**" not in turn.outcome  # reasoning summaries


def test_renamed_thread_has_the_later_name(tasks, manifest) -> None:
    task = _task(tasks, manifest, "logslice-perf")
    assert task.title is not None
    assert task.title.text == "logslice: reader performance"
    assert task.title.source == "codex:session_index"
    index = [
        json.loads(line)
        for line in (CORPUS / "codex_home" / "session_index.jsonl").read_text().splitlines()
    ]
    names = [e["thread_name"] for e in index if e["id"] == task.native_id]
    assert names == ["perf spike", "logslice: reader performance"]


def test_titles(tasks, manifest) -> None:
    for info in manifest.tasks:
        task = tasks[(info.source, info.native_id)]
        if info.title is not None and info.delegation != "subagent":
            assert task.title is not None and task.title.text == info.title, info.spec_key
    review = _task(tasks, manifest, "design-review-rate-limits")
    assert review.title is not None and review.title.source == "chat_import:title"


def test_appended_turns_on_several_days(tasks, manifest) -> None:
    proxmox = _task(tasks, manifest, "homelab-proxmox-terraform")
    assert len({t.started_at.date() for t in proxmox.turns}) == 3
    stripe = _task(tasks, manifest, "ledgerline-stripe-webhooks")
    assert len({t.started_at.date() for t in stripe.turns}) == 2


def test_two_human_conversation(tasks, manifest) -> None:
    review = _task(tasks, manifest, "design-review-rate-limits")
    assert review.native_context["turn_rule"] == "speakers"
    assert {(t.prompt_speaker, t.outcome_speaker) for t in review.turns} == {("Mara", "Jonas")}


def test_planted_secrets_reach_capture_for_redaction(tasks) -> None:
    prompts = "\n".join(t.prompt for task in tasks.values() for t in task.turns)
    for secret in (
        FAKE_GITHUB_TOKEN,
        FAKE_DATABASE_URL,
        FAKE_AWS_ACCESS_KEY_ID,
        FAKE_AWS_SECRET_ACCESS_KEY,
        FAKE_OPENAI_KEY,
    ):
        assert secret in prompts


def test_late_night_session_starts_on_the_previous_utc_day(tasks, manifest) -> None:
    restic = _task(tasks, manifest, "homelab-restic-s3")
    assert manifest.task("homelab-restic-s3").days == ("2026-10-03",)  # local date
    assert restic.started_at.date().isoformat() == "2026-10-02"  # UTC


# -- the gold set -------------------------------------------------------------------------------


def test_gold_file_shape() -> None:
    lines = [json.loads(line) for line in GOLD.read_text().splitlines()]
    assert 40 <= len(lines) <= 60
    assert len({g["id"] for g in lines}) == len(lines)
    kinds = {"decision", "insight", "correction", "fact", "procedure"}
    for g in lines:
        assert list(g) == ["id", "query", "relevant", "kind"]
        assert g["kind"] in kinds
        assert g["relevant"]
    assert {g["kind"] for g in lines} == kinds


def test_every_gold_reference_resolves_to_a_complete_user_owned_turn(tasks) -> None:
    for g in (json.loads(line) for line in GOLD.read_text().splitlines()):
        for ref in g["relevant"]:
            task = tasks.get((ref["source"], ref["native_task_id"]))
            assert task is not None, (g["id"], ref)
            assert task.ownership.ownership == "user_owned", (g["id"], ref)
            assert 0 <= ref["turn_ordinal"] < len(task.turns), (g["id"], ref)
            turn = task.turns[ref["turn_ordinal"]]
            assert turn.ordinal == ref["turn_ordinal"]
            # queries are paraphrases, never copied from the turn they point at
            assert g["query"].lower() not in (turn.prompt + turn.outcome).lower(), g["id"]
