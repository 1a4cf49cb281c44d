"""`memory-pipeline run` killed or stopped inside its semantic pass never wedges later runs.

Real processes: the CLI executes the ingest job on one Codex task; a fake Ollama server (the only
fake, at the network boundary) holds the first run inside its semantic pass, where it has the
`llm` pool's one slot.
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from memory_pipeline_tests.support.fake_ollama import Delay
from memory_pipeline_tests.support.pipeline_home import (  # noqa: F401 - fixture
    CLI,
    PipelineHome,
    cpu_share,
    pipeline_home,
    wait_until,
)

pytestmark = pytest.mark.slow


def start_run_in_semantic_pass(home: PipelineHome) -> tuple[subprocess.Popen[bytes], str]:
    """A `memory-pipeline run` whose semantic pass is waiting for the model, and its run id."""
    home.ollama.script_chat(*[Delay(600)] * 3)
    proc = home.start([CLI, "run"], home.env(model=True), "first")
    wait_until(lambda: home.ollama.chat_requests, 180, "the run to call the model")
    (run_id,) = home.runs()
    assert home.llm_slot_holders() == {run_id}
    return proc, run_id


def test_a_run_killed_in_its_semantic_pass_does_not_block_the_next(
    pipeline_home: PipelineHome,  # noqa: F811
) -> None:
    home = pipeline_home
    first, first_id = start_run_in_semantic_pass(home)

    second = home.start([CLI, "run"], home.env(model=False), "second")
    wait_until(home.runs_waiting_for_llm, 180, "the second run to wait for the llm pool")
    # While it waits for the slot it sleeps between claim checks; it does not spin a core.
    assert cpu_share(second.pid, 4) < 0.1

    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert second.wait(timeout=300) == 0, home.log("second")[-3000:]

    said = home.log("second")
    assert f"run {first_id[:8]} (ingest_job) was left STARTED and its process" in said
    runs = home.runs()
    assert runs.pop(first_id) == "FAILURE"
    # ingest, maintenance, dream, backup
    assert set(runs.values()) == {"SUCCESS"} and len(runs) == 4
    assert home.llm_slot_holders() == set()
    assert home.tasks_and_pending_passes() == (1, 0)  # the semantic pass was done after all


def test_sigterm_stops_a_run_at_once_even_while_it_waits_for_the_pool(
    pipeline_home: PipelineHome,  # noqa: F811
) -> None:
    """`timeout`, systemd or a closed terminal stop a run the way Ctrl-C does: marked failed,
    its slot or its place in the pool's queue released, one line saying what to do."""
    home = pipeline_home
    first, first_id = start_run_in_semantic_pass(home)
    second = home.start([CLI, "run"], home.env(model=False), "second")
    (second_id,) = wait_until(home.runs_waiting_for_llm, 180, "the second run to wait")

    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 2
    last = home.log("second").strip().splitlines()[-1]
    assert last == (
        f"error: interrupted: run {second_id} (ingest_job) was stopped and marked failed; "
        "`memory-pipeline run` picks its work up again"
    )
    assert home.runs()[second_id] == "FAILURE"
    assert home.runs_waiting_for_llm() == set()

    first.send_signal(signal.SIGTERM)  # inside its semantic pass, holding the slot
    assert first.wait(timeout=30) == 2
    assert home.runs() == {first_id: "FAILURE", second_id: "FAILURE"}
    assert home.llm_slot_holders() == set()


def test_ctrl_c_in_a_terminal_prints_one_line_and_no_traceback(
    pipeline_home: PipelineHome,  # noqa: F811
) -> None:
    """A terminal's Ctrl-C signals the whole foreground process group: the CLI and every helper
    process Dagster started for the run (the tail and orphan watcher that mirror a step's output).
    The person sees one line saying what happened and what to do, never a helper's traceback."""
    home = pipeline_home
    first, first_id = start_run_in_semantic_pass(home)

    os.killpg(first.pid, signal.SIGINT)
    assert first.wait(timeout=60) == 2
    said = home.log("first")
    assert "Traceback" not in said and "KeyboardInterrupt" not in said, said[-3000:]
    assert said.strip().splitlines()[-1] == (
        f"error: interrupted: run {first_id} (ingest_job) was stopped and marked failed; "
        "`memory-pipeline run` picks its work up again"
    )
    assert home.runs() == {first_id: "FAILURE"}
    assert home.llm_slot_holders() == set()
