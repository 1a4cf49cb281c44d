"""Progress lines of a long step, for the terminal of `memory-pipeline run` as well as the run's
log in the Dagster UI.

`memory-pipeline run` executes its jobs in this process with Dagster's console logger quiet (a
failed step would print a stack trace), so a step's `context.log.info` never reaches the
terminal. A step that can take minutes (the inbox storing a large document) reports through
`step_progress(context.log.info)`: each line goes to the run's log and to the `PROGRESS` logger,
which `to_terminal` connects to the run command's own output for the length of the run.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

PROGRESS = logging.getLogger("memory_pipeline.progress")
PROGRESS.propagate = False  # never the root logger's handlers: only a terminal that asked
PROGRESS.setLevel(logging.INFO)


class _Say(logging.Handler):
    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.say(f"    {record.getMessage()}")
        except Exception:  # a closed terminal must not fail the step
            self.handleError(record)


def step_progress(log: Callable[[str], None], every_s: float = 0.0) -> Callable[[str], None]:
    """A progress function for a step: `log` (the run's log) gets every line, the terminal (if
    one listens) at most one line each `every_s` seconds (a step that reports every batch)."""
    last = [-math.inf]

    def say(line: str) -> None:
        log(line)
        now = time.monotonic()
        if now - last[0] >= every_s:
            last[0] = now
            PROGRESS.info(line)

    return say


@contextmanager
def to_terminal(say: Callable[[str], None]) -> Iterator[None]:
    """Steps' progress lines go to `say` while the block runs."""
    handler = _Say(say)
    PROGRESS.addHandler(handler)
    try:
        yield
    finally:
        PROGRESS.removeHandler(handler)
