"""The offline rules backend: memory titles."""

from __future__ import annotations

import pytest

from memory_pipeline_tests.semantic.rules_support import T, memories, run


def test_a_title_is_never_cut_inside_code():
    result = run(
        [
            T(
                0,
                "It's a dbt model, how do I add partitioning in the config?",
                'Yes: partition_by={"field": "order_ts", "granularity": "day"} and '
                'cluster_by=["store_id"] in the model config.',
            )
        ]
    )
    titles = [m.title for m in memories(result)]
    assert titles and all(t != 'partition_by={"field"' for t in titles)
    assert titles[0].startswith('partition_by={"field": "order_ts"')


@pytest.mark.parametrize(
    "announcement", ["ok, let's add a new feature.", "One more thing.", "Another small change:"]
)
def test_a_sentence_that_only_announces_a_subject_is_never_the_title(announcement):
    turn = T(
        0,
        f"{announcement} i would like to choose between the web ui and a terminal ui at start",
        "Added a --ui option: web or tui.",
    )
    title = run([turn]).segments[0].title
    assert "feature" not in title.lower() and "thing" not in title.lower()
    assert "web ui" in title.lower(), title
