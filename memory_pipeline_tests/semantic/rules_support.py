"""What the offline rules tests share: turn and pass builders and two hand-made sessions."""

from __future__ import annotations

from collections.abc import Sequence

from memory_pipeline.semantic.models import PassInput, PassResult, TurnInput, validate_result
from memory_pipeline.semantic.offline_rules import OfflineRulesBackend


def T(ordinal: int, prompt: str, outcome: str) -> TurnInput:
    return TurnInput(ordinal=ordinal, prompt=prompt, outcome=outcome)


def run(
    turns: Sequence[TurnInput],
    tail: Sequence[TurnInput] = (),
    embedder=None,
    title: str | None = None,
) -> PassResult:
    pass_input = PassInput(
        task_title=title, source="codex", tail_context=list(tail), new_turns=list(turns)
    )
    result = OfflineRulesBackend(embedder=embedder).run(pass_input)
    validate_result(pass_input, result)  # the backend's output always passes the gate
    return result


def spans(result: PassResult) -> list[tuple[int, int]]:
    return [(s.first_ordinal, s.last_ordinal) for s in result.segments]


def memories(result: PassResult, kind: str | None = None):
    return [m for s in result.segments for m in s.memories if kind is None or m.type == kind]


CSV_EXPORT = [
    T(
        0,
        "The CSV export endpoint times out for large accounts. Can you profile export_csv?",
        "Profiled export_csv: 92% of the time is spent in per-row ORM queries for the account "
        "owner. The export issues one query per row.",
    ),
    T(
        1,
        "Batch those owner lookups in the export.",
        "The CSV export now prefetches owners with a single select_related query; a 50k-row "
        "export went from 41s to 3s.",
    ),
    T(
        2,
        "Stream the CSV rows instead of building the whole export in memory.",
        "export_csv now yields rows through a StreamingHttpResponse, so memory stays flat during "
        "large exports.",
    ),
]


DOCKER = [
    T(
        3,
        "Write a Dockerfile for the worker service with a slim Python base image.",
        "Added worker/Dockerfile based on python:3.12-slim with a non-root user and pip cache "
        "disabled.",
    ),
    T(
        4,
        "The Docker image build for the worker is slow in CI; cache the pip layer.",
        "Reordered the Dockerfile so requirements are copied and installed before the source, so "
        "CI reuses the cached pip layer.",
    ),
    T(
        5,
        "Add a healthcheck to the worker container image.",
        "Added a HEALTHCHECK that runs `python -m worker.health` every 30s in the Dockerfile.",
    ),
]
