"""The offline rules backend: the project a session names."""

from __future__ import annotations

import pytest

from memory_pipeline_tests.semantic.rules_support import T, run


def test_explicit_project_name_is_set_with_evidence():
    turns = [
        T(
            0,
            "For Billing: the invoice PDF renders the VAT line twice.",
            "Fixed the duplicate VAT line in the invoice template.",
        )
    ]
    seg = run(turns).segments[0]
    assert seg.project == "Billing"
    assert seg.project_evidence and "For Billing:" in seg.project_evidence


def test_the_name_project_pattern():
    turns = [
        T(
            0,
            "In the memory-pipeline project we store vectors in pgvector. Add an index.",
            "Added an HNSW index on the embeddings table.",
        )
    ]
    seg = run(turns).segments[0]
    assert seg.project == "memory-pipeline"
    assert "memory-pipeline project" in (seg.project_evidence or "")


@pytest.mark.parametrize(
    "prompt",
    [
        "cd /home/dev/src/acme-api and run the tests.",
        "Run the tests in ~/work/billing-service/tests please.",
        "This project needs a linter config.",
        "In the main repo, bump the version.",
    ],
)
def test_no_project_from_paths_or_vague_mentions(prompt):
    seg = run([T(0, prompt, "Done.")]).segments[0]
    assert seg.project is None and seg.project_evidence is None


def test_two_different_project_names_are_ambiguous():
    turns = [T(0, "Port the Atlas project's retry helper to project Hermes.", "Ported it.")]
    assert run(turns).segments[0].project is None
