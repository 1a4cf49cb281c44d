"""Progress lines of long steps on the terminal of `memory-pipeline run` (progress.py)."""

from __future__ import annotations

from memory_pipeline.progress import step_progress, to_terminal


def test_step_lines_reach_the_terminal_only_while_it_listens_and_throttled() -> None:
    logged: list[str] = []
    shown: list[str] = []
    every = step_progress(logged.append)
    batched = step_progress(logged.append, every_s=3600)
    every("before the run")
    with to_terminal(shown.append):
        every("inbox: a.md: 2,000 passages stored so far")
        batched("embedded 64/9000 passages")
        batched("embedded 128/9000 passages")  # within the hour: the log only
    every("after the run")
    assert logged == [
        "before the run",
        "inbox: a.md: 2,000 passages stored so far",
        "embedded 64/9000 passages",
        "embedded 128/9000 passages",
        "after the run",
    ]
    assert shown == [
        "    inbox: a.md: 2,000 passages stored so far",
        "    embedded 64/9000 passages",
    ]
