"""`memory-pipeline ui` as a user runs it: stopped mid-run, restarted at once on the same port.

The end-to-end test starts the real webserver, daemon and code server (about 20 s each time on
two cores); a fake Ollama server (the only fake, at the network boundary) holds the sensor's run
inside its semantic pass while the ui is interrupted.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import time

import psutil
import pytest

from memory_pipeline.cli.processes import require_free_port
from memory_pipeline_tests.support.fake_ollama import Delay
from memory_pipeline_tests.support.pipeline_home import (  # noqa: F401 - fixture
    CLI,
    PipelineHome,
    pipeline_home,
    wait_until,
)


def time_wait_on(port: int) -> bool:
    return any(
        c.status == psutil.CONN_TIME_WAIT and c.laddr and c.laddr.port == port
        for c in psutil.net_connections(kind="tcp4")
    )


def test_a_port_whose_old_connections_wait_in_time_wait_is_free() -> None:
    """A ui stopped moments ago leaves its browser connections in TIME_WAIT on its port."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the webserver binds
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the server closes first: its end waits in TIME_WAIT
        time.sleep(0.1)
        client.close()
    assert time_wait_on(port)
    require_free_port("127.0.0.1", port)  # no error


def processes_of(memory_home: str) -> list[psutil.Process]:
    """Every process started for this MEMORY_HOME (the ui's children inherit its environment)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("MEMORY_HOME") == memory_home:
                found.append(proc)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            pass
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def webserver_answers(port: int) -> http.client.HTTPConnection | None:
    """An open keep-alive connection to the webserver (like a browser tab), once it answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/server_info")
        response = conn.getresponse()
        response.read()
    except OSError:
        conn.close()
        return None
    return conn if response.status == 200 else None


@pytest.mark.slow
def test_ui_stopped_mid_run_restarts_at_once_and_its_daemon_still_runs(
    pipeline_home: PipelineHome,  # noqa: F811
) -> None:
    home = pipeline_home
    port = free_port()
    home.ollama.script_chat(*[Delay(600)] * 3)
    # Started the way a shell starts a background job (`memory-pipeline ui &`): SIGINT ignored.
    background = ["sh", "-c", 'trap "" INT; exec "$0" "$@"']
    first_ui = home.start([*background, CLI, "ui", "--port", str(port)], home.env(True), "ui1")
    browser = wait_until(lambda: webserver_answers(port), 240, "the first ui's webserver")
    wait_until(lambda: home.ollama.chat_requests, 240, "the sensor's run to call the model")
    (first_run,) = home.sensor_runs("transcript_sensor")

    os.kill(first_ui.pid, signal.SIGINT)  # Ctrl-C
    assert first_ui.wait(timeout=90) == 0, home.log("ui1")[-3000:]
    browser.close()

    second_ui = home.start([CLI, "ui", "--port", str(port)], home.env(False), "ui2")
    wait_until(
        lambda: second_ui.poll() is not None or webserver_answers(port),
        240,
        "the second ui's webserver",
    )
    assert second_ui.poll() is None, home.log("ui2")[-3000:]  # no "port ... is in use"

    # The interrupted run ended, and it holds no slot: it was failed by its own process on the
    # way out, or by the restarted ui because that process is gone.
    wait_until(lambda: home.runs()[first_run] == "FAILURE", 60, "the first run to be failed")
    # The daemon retries it (a dead run counts as crashed) and the retry completes. Waiting for it
    # also keeps the retry from capturing the new version below before the sensor sees it.
    wait_until(
        lambda: "SUCCESS" in home.retries_of(first_run).values(), 300, "the retry to succeed"
    )
    # A new version of the transcript: the daemon launches a run for it, and it completes. The
    # transcript sensor launches it, unless the hourly catch-up (minute 7) ticked first and took
    # the change itself: then the sensor rightly requests nothing.
    before = set(home.runs())
    os.utime(home.transcript)

    def new_daemon_run_succeeded() -> bool:
        runs = home.sensor_runs("transcript_sensor") | home.sensor_runs(
            "hourly_catch_up", tag="dagster/schedule_name"
        )
        return any(status == "SUCCESS" for run, status in runs.items() if run not in before)

    try:
        wait_until(new_daemon_run_succeeded, 300, "a new daemon run of the restarted ui to succeed")
    except AssertionError as timed_out:
        ticks = "\n".join(home.last_ticks())
        runs = home.runs()
        raise AssertionError(f"{timed_out}\nruns: {runs}\nticks:\n{ticks}") from None
    assert home.llm_slot_holders() == set()
    assert home.tasks_and_pending_passes() == (1, 0)  # the interrupted pass was done after all

    os.kill(second_ui.pid, signal.SIGINT)
    assert second_ui.wait(timeout=90) == 0, home.log("ui2")[-3000:]
    assert processes_of(home.env()["MEMORY_HOME"]) == []  # nothing left behind
