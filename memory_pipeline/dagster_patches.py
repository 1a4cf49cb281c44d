"""Fixes for two Dagster 1.13 bugs we hit, applied wherever our code location is loaded.

Both are in how the in-process executor (which `ingest_job` uses) waits for a pool slot: the
semantic pass waits for the `llm` pool's one slot while another run holds it, for as long as the
other run's model calls take.

1. The wait never sleeps. Dagster computes the sleep until the next claim check as
   `min([0, *(ready_at - now)])`, which is never positive, so a waiting run spins a whole core.
   Upstream: dagster-io/dagster#20367 noticed it ("we would always end up sleeping 0 for
   concurrency checks which leads to busy waiting") and was closed unmerged; 1.13.27 still has
   it. Fixed: the time to the earliest claim check, never negative. Dagster still retries the
   claim on its own back-off (1 s growing to 15 s), so a freed slot is taken within that time.
2. The wait ignores Ctrl-C and SIGTERM. During a run Dagster only records an interrupt, and acts
   on it when a step starts or yields an event; a waiting run does neither, so it went on waiting
   and had to be killed, which left it STARTED. Fixed: the wait checks for a recorded interrupt
   every quarter second and raises it as Dagster's own interruption, so the run is marked failed
   and its claims released exactly as when a step is interrupted.
"""

from __future__ import annotations

import time

from dagster._core.errors import DagsterExecutionInterruptedError
from dagster._core.execution.plan.active import ActiveExecution
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._utils.interrupts import pop_captured_interrupt

_INTERRUPT_CHECK_S = 0.25


def _interval_to_next_pending_claim_check(self: InstanceConcurrencyContext) -> float:
    pending = [
        ready_at
        for step_key, ready_at in self._pending_timeouts.items()
        if step_key in self._pending_claims
    ]
    if not pending:
        return 0.0
    return max(0.0, min(pending) - time.time())


def _sleep_til_ready(self: ActiveExecution) -> None:
    deadline = time.monotonic() + self.sleep_interval()
    while True:
        if pop_captured_interrupt():
            self.mark_interrupted()
            raise DagsterExecutionInterruptedError("Interrupted while waiting for a pool slot")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        time.sleep(min(remaining, _INTERRUPT_CHECK_S))


def apply() -> None:
    """Install both fixes (idempotent)."""
    InstanceConcurrencyContext.interval_to_next_pending_claim_check = (  # type: ignore[method-assign]
        _interval_to_next_pending_claim_check
    )
    ActiveExecution.sleep_til_ready = _sleep_til_ready  # type: ignore[method-assign]


apply()
