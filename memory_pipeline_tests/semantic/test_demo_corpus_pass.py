"""The offline semantic pass over the whole demo corpus, read through the real connectors.

The corpus (`memory_pipeline/demo/corpus/`) is rendered from the conversation spec, whose turns
carry `plants`: the decisions, insights, corrections and topic switches planted in them. Each
user-owned task is parsed by its connector, turned into one PassInput (all turns new), run through
`OfflineRulesBackend`, and the result is compared with the plants of the matching spec session.

Documented minimums (recall = planted turns the pass found / planted turns), with the production
configuration (MiniLM embedder) and with lexical similarity only. At the time of writing the pass
found 44/48 decisions, 33/37 insights, 5/5 corrections and 10/10 topic switches in both
configurations (1 unplanted segment start with MiniLM, which embeds each turn as its passage
renders it, speakers included; 0 when it embedded "prompt\noutcome"; 5 with lexical similarity
only);
the minimums leave room for corpus edits without letting the rules regress.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from memory_pipeline.capture.chat_import import ChatImportConnector
from memory_pipeline.capture.claude_code import ClaudeCodeConnector
from memory_pipeline.capture.codex import CodexConnector
from memory_pipeline.capture.models import ParsedTask
from memory_pipeline.demo.build_corpus import CHATS, CORPUS_DIR, SESSIONS
from memory_pipeline.semantic.models import PassInput, PassResult, TurnInput, validate_result
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend
from memory_pipeline.semantic.text import normalize_ws

MIN_DECISION_RECALL = 0.80
MIN_INSIGHT_RECALL = 0.75
MIN_DECISIONS = 40  # distilled decisions over the whole corpus, planted or not
MIN_INSIGHTS = 35
# Segment starts where the spec plants no topic switch (over-segmentation), per configuration.
MAX_UNPLANTED_BOUNDARIES = {"minilm": 2, "lexical": 6}

pytestmark = pytest.mark.slow


@dataclass
class Case:
    key: str
    task: ParsedTask
    plants: list[tuple[str, ...]]  # per ordinal


def _key(prompt: str) -> str:
    return normalize_ws(prompt)[:120]


def _user_owned_tasks() -> list[ParsedTask]:
    never = datetime(2100, 1, 1, tzinfo=UTC)  # every file counts as settled
    connectors = [
        CodexConnector(CORPUS_DIR / "codex_home"),
        ClaudeCodeConnector(CORPUS_DIR / "claude_home", now=lambda: never),
        ChatImportConnector(CORPUS_DIR / "imports"),
    ]
    tasks = []
    for connector in connectors:
        for path in connector.discover():
            for task in connector.parse(path).tasks:
                if task.ownership.ownership == "user_owned" and task.turns:
                    tasks.append(task)
    return tasks


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    assert CORPUS_DIR.is_dir(), "demo corpus missing: python -m memory_pipeline.demo.build_corpus"
    by_first_prompt = {_key(t.turns[0].prompt): t for t in _user_owned_tasks()}
    specs: list[tuple[str, list[str], list[tuple[str, ...]]]] = []
    for session in SESSIONS:
        if not session.delegated:
            turns = [t for t in session.turns if t.complete]
            specs.append((session.key, [t.prompt for t in turns], [t.plants for t in turns]))
    for chat in CHATS:
        prompts = ["\n".join(m.text for m in t.prompt) for t in chat.turns]
        specs.append((chat.key, prompts, [t.plants for t in chat.turns]))
    out = []
    for key, prompts, plants in specs:
        task = by_first_prompt.get(_key(prompts[0]))
        assert task is not None, f"spec session {key} not found in the corpus"
        assert len(task.turns) == len(plants), f"{key}: turn count differs from the spec"
        out.append(Case(key, task, plants))
    assert len(out) == len(by_first_prompt), "every user-owned corpus task maps to a spec session"
    return out


def _pass_input(task: ParsedTask) -> PassInput:
    return PassInput(
        task_title=task.title.text if task.title else None,
        source=task.source,
        new_turns=[
            TurnInput(
                ordinal=t.ordinal,
                prompt=t.prompt,
                outcome=t.outcome,
                started_at=t.started_at,
                prompt_speaker=t.prompt_speaker,
                outcome_speaker=t.outcome_speaker,
            )
            for t in task.turns
        ],
    )


def _run_all(cases: list[Case], backend: OfflineRulesBackend) -> dict[str, PassResult]:
    results = {}
    for case in cases:
        pass_input = _pass_input(case.task)
        results[case.key] = validate_result(pass_input, backend.run(pass_input))
    return results


@pytest.fixture(scope="module")
def results(cases) -> dict[str, dict[str, PassResult]]:
    from memory_pipeline.embedding.minilm import get_minilm

    return {
        "minilm": _run_all(cases, OfflineRulesBackend(embedder=get_minilm())),
        "lexical": _run_all(cases, OfflineRulesBackend()),
    }


def _recall(cases, results, kind: str) -> tuple[int, int]:
    found = planted = 0
    for case in cases:
        cited = {
            o
            for seg in results[case.key].segments
            for m in seg.memories
            if m.type == kind
            for o in m.supporting_ordinals
        }
        for ordinal, plants in enumerate(case.plants):
            if kind in plants:
                planted += 1
                found += ordinal in cited
    return found, planted


@pytest.mark.parametrize("config", ["minilm", "lexical"])
def test_planted_decisions_and_insights_are_distilled(cases, results, config):
    for kind, minimum in (("decision", MIN_DECISION_RECALL), ("insight", MIN_INSIGHT_RECALL)):
        found, planted = _recall(cases, results[config], kind)
        assert planted >= 20, f"the corpus should plant many {kind}s"
        assert found / planted >= minimum, f"{config}: {kind} recall {found}/{planted}"
    memories = [m for r in results[config].values() for s in r.segments for m in s.memories]
    assert sum(m.type == "decision" for m in memories) >= MIN_DECISIONS
    assert sum(m.type == "insight" for m in memories) >= MIN_INSIGHTS


@pytest.mark.parametrize("config", ["minilm", "lexical"])
def test_planted_corrections_are_found_and_nothing_else(cases, results, config):
    planted = {
        (case.key, ordinal)
        for case in cases
        for ordinal, plants in enumerate(case.plants)
        if "correction" in plants
    }
    found = {
        (case.key, c.correcting_ordinal)
        for case in cases
        for c in results[config][case.key].corrections
    }
    assert len(planted) >= 4
    assert found == planted
    for case in cases:
        for c in results[config][case.key].corrections:
            assert c.corrected_ordinal == c.correcting_ordinal - 1
            assert c.agent_did and c.user_expected


@pytest.mark.parametrize("config", ["minilm", "lexical"])
def test_multi_topic_sessions_are_segmented_at_the_planted_switches(cases, results, config):
    multi_topic = [c for c in cases if any("topic_switch" in p for p in c.plants)]
    assert len(multi_topic) >= 6
    unplanted = 0
    for case in cases:
        starts = {s.first_ordinal for s in results[config][case.key].segments}
        switches = {o for o, p in enumerate(case.plants) if "topic_switch" in p}
        assert switches <= starts, f"{config}: {case.key} segments start at {sorted(starts)}"
        if switches:
            assert len(starts) >= 2
        unplanted += len(starts - switches - {0})
    assert unplanted <= MAX_UNPLANTED_BOUNDARIES[config]


def test_memories_read_on_their_own(cases, results):
    for result in results["minilm"].values():
        for seg in result.segments:
            assert seg.title and len(seg.title) <= 80
            for m in seg.memories:
                first = m.content.split(" ", 1)[0].lower().strip(",:;")
                assert first not in {"it", "this", "that", "they", "these", "those"}, m.content
                assert len(m.content.split()) >= 5 and m.title
                assert m.content.endswith((".", "!", "?", "…")), m.content


def test_project_is_only_set_from_explicit_naming(results):
    projects = {
        (seg.project, seg.project_evidence)
        for result in results["minilm"].values()
        for seg in result.segments
        if seg.project
    }
    # "New project: meterflow." names a project explicitly; cwd and repository never count, so
    # every project found is quoted by its evidence.
    assert "meterflow" in {name for name, _ in projects}
    assert all(evidence and name in evidence for name, evidence in projects)


def test_the_pass_is_deterministic(cases, results):
    again = _run_all(cases, OfflineRulesBackend())
    assert again == results["lexical"]
