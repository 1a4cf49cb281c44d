"""How long a new conversation, then a new turn, takes to become searchable under `ui`.

    .venv/bin/python scripts/bench_freshness.py [--quiet-minutes 0] [--rounds 3] [--port 3997]

A benchmark, not a test. Starts `memory-pipeline ui` in a throwaway MEMORY_HOME whose only source
is a chat import directory, waits until the daemon's sensors have ticked, then per round writes a
new conversation (a new file) and, once that is found, appends a turn to it. For each it measures
the time from the write until `memory-pipeline search` returns it (the database is polled every
half second first; the CLI then confirms, and is polled itself if it does not find it yet), and
splits it with the ingest run that captured it: waiting for a sensor tick (write -> run created),
queue and start (created -> started), the run itself (started -> ended), and the rest (ended ->
found). Prints every figure and a summary. Targets (README, must-have 7): within 60 s with
MEMORY_SEMANTIC_QUIET_MINUTES=0, within the quiet period plus 2 minutes otherwise.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from memory_pipeline.bench.freshness import write_turn

CLI = str(Path(sys.executable).parent / "memory-pipeline")
TIMEOUT_S = 900  # a hang guard per measurement, far above any target


def say(message: str) -> None:
    print(message, flush=True)


def in_database(conn: psycopg.Connection, word: str) -> bool:
    """A memory with the word exists and has a vector in the serving space."""
    row = conn.execute(
        "SELECT 1 FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id"
        " JOIN embedding_spaces s ON s.name = e.space AND s.serving"
        " WHERE m.content ILIKE %s LIMIT 1",
        [f"%{word}%"],
    ).fetchone()
    return row is not None


def search_finds(env: dict[str, str], word: str) -> bool:
    proc = subprocess.run(
        [CLI, "search", "--json", "--source", "chat_import", f"{word} cache"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode == 0 and word in proc.stdout


def wait_found(conn: psycopg.Connection, env: dict[str, str], word: str, since: float) -> float:
    """Seconds from `since` until search returns the word."""
    while time.time() - since < TIMEOUT_S:
        if in_database(conn, word):
            found_at = time.time()
            if search_finds(env, word):
                return found_at - since
        time.sleep(0.5)
    raise SystemExit(f"error: {word} was not searchable after {TIMEOUT_S} s")


def run_phases(instance, since: float, found_after: float) -> str:  # type: ignore[no-untyped-def]
    """The ingest runs created after `since`: sensor wait, queue+start, run, rest."""
    import dagster as dg

    records = instance.get_run_records(
        filters=dg.RunsFilter(
            job_name="ingest_job", created_after=datetime.fromtimestamp(since, UTC)
        ),
        ascending=True,
    )
    parts = []
    for rec in records:
        created = rec.create_timestamp.timestamp()
        started, ended = rec.start_time, rec.end_time
        if created - since > found_after:
            continue
        text = f"tick wait {created - since:5.1f} s"
        if started:
            text += f", queued+start {started - created:5.1f} s"
        if started and ended:
            rest = since + found_after - ended
            text += f", run {ended - started:5.1f} s, after run {rest:5.1f} s"
        sensor = rec.dagster_run.tags.get("dagster/sensor_name", "?")
        parts.append(f"{sensor}: {text} [{rec.dagster_run.status.value}]")
    return "; ".join(parts) or "no ingest run recorded"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet-minutes", type=float, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=3997)
    parser.add_argument("--settle", type=float, default=45, help="seconds for the ui to settle")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-freshness-") as tmp:
        root = Path(tmp)
        imports = root / "imports"
        imports.mkdir()
        env = {
            **os.environ,
            "MEMORY_HOME": str(root / "home"),
            "MEMORY_SOURCES": "real",
            "CODEX_HOME": str(root / "codex"),
            "CLAUDE_CONFIG_DIR": str(root / "claude"),
            "MEMORY_IMPORT_DIR": str(imports),
            "MEMORY_SEMANTIC_QUIET_MINUTES": str(args.quiet_minutes),
        }
        env.pop("DAGSTER_HOME", None)
        env.pop("DATABASE_URL", None)
        log = open(root / "ui.log", "w")  # noqa: SIM115 - closed below
        ui = subprocess.Popen(
            [CLI, "ui", "--port", str(args.port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            say(f"memory-pipeline ui on port {args.port}, quiet {args.quiet_minutes} min")
            deadline = time.time() + 300
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{args.port}/server_info", timeout=2)
                    break
                except OSError:
                    if time.time() > deadline or ui.poll() is not None:
                        raise SystemExit("error: the ui did not start; see its log") from None
                    time.sleep(1)
            time.sleep(args.settle)  # the daemon's first ticks, the code server loaded

            os.environ.update({k: env[k] for k in ("MEMORY_HOME", "MEMORY_SOURCES")})
            from memory_pipeline.dagster_home import dagster_instance
            from memory_pipeline.db.connection import resolve_urls
            from memory_pipeline.settings import Settings

            settings = Settings.from_env()
            urls = resolve_urls(settings, start=False)
            instance = dagster_instance(settings, urls)
            results: dict[str, list[float]] = {"new conversation": [], "new turn": []}
            with psycopg.connect(urls.app, autocommit=True) as conn:
                for n in range(args.rounds):
                    task = f"bench-{uuid.uuid4().hex[:8]}"
                    path = imports / f"{task}.jsonl"
                    for kind in results:
                        word = f"zq{uuid.uuid4().hex[:10]}"
                        since = time.time()
                        title = f"bench {n}" if kind == "new conversation" else None
                        write_turn(path, task, word, word, title)
                        took = wait_found(conn, env, word, since)
                        results[kind].append(took)
                        say(f"round {n + 1} {kind}: searchable after {took:5.1f} s")
                        say(f"    {run_phases(instance, since, took)}")
        finally:
            os.killpg(ui.pid, signal.SIGINT)
            try:
                ui.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(ui.pid, signal.SIGKILL)
            log.close()
            subprocess.run([CLI, "db", "stop"], env=env, capture_output=True, check=False)
        say("")
        for kind, times in results.items():
            if times:
                say(
                    f"{kind}: median {statistics.median(times):.1f} s, "
                    f"min {min(times):.1f} s, max {max(times):.1f} s over {len(times)}"
                )


if __name__ == "__main__":
    main()
