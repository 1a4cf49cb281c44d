"""Measure how much CPU an idle `memory-pipeline ui` burns, over its whole process tree.

    .venv/bin/python scripts/measure_ui_idle_cpu.py [--warmup 90] [--seconds 60] [--port 3999]

Starts `memory-pipeline ui` in a throwaway MEMORY_HOME with empty sources (so no run is
requested), waits `--warmup` seconds for the webserver, the daemon and the code server to settle,
then samples every process in the tree once a second for `--seconds` and prints the CPU used as a
percentage of one core. Processes that start during the window (a code server the daemon
replaces, say) are counted from their start; one that exits between two samples loses at most
one second of its time. Not a test: the figure depends on the machine and what else runs on it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

CLI = str(Path(sys.executable).parent / "memory-pipeline")


def tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def cpu_seconds(proc: psutil.Process) -> float | None:
    try:
        t = proc.cpu_times()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    return t.user + t.system


def label(proc: psutil.Process) -> str:
    """A short name for a process of the tree: which program, and for Dagster which command."""
    try:
        argv = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return "?"
    words = [Path(a).name for a in argv[1:6] if not a.startswith("{")]
    return " ".join(words)[:70]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=float, default=90)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--port", type=int, default=3999)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ui-idle-") as tmp:
        home = Path(tmp)
        env = {
            **os.environ,
            "MEMORY_HOME": str(home / "home"),
            "MEMORY_SOURCES": "real",
            "CODEX_HOME": str(home / "codex"),
            "CLAUDE_CONFIG_DIR": str(home / "claude"),
            "MEMORY_IMPORT_DIR": str(home / "imports"),
        }
        env.pop("DAGSTER_HOME", None)
        log = open(home / "ui.log", "w")  # noqa: SIM115 - closed below
        ui = subprocess.Popen(
            [CLI, "ui", "--port", str(args.port)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            time.sleep(args.warmup)
            if ui.poll() is not None:
                log.flush()
                sys.exit(
                    f"ui exited with {ui.returncode}:\n{(home / 'ui.log').read_text()[-3000:]}"
                )
            root = psutil.Process(ui.pid)
            start = time.time()
            seen: dict[tuple[int, float], float] = {}
            first: dict[tuple[int, float], float] = {}
            labels: dict[tuple[int, float], str] = {}
            while time.time() - start < args.seconds:
                for proc in tree(root):
                    used = cpu_seconds(proc)
                    if used is None:
                        continue
                    key = (proc.pid, proc.create_time())
                    if key not in first:
                        # Started inside the window: everything it used counts.
                        first[key] = 0.0 if proc.create_time() > start else used
                    seen[key] = used
                    labels.setdefault(key, label(proc))
                time.sleep(1)
            elapsed = time.time() - start
            used = sum(seen[k] - first[k] for k in seen)
            by_label: dict[str, list[float]] = {}
            for k in seen:
                by_label.setdefault(labels[k], []).append(seen[k] - first[k])
        finally:
            if ui.poll() is None:
                ui.send_signal(signal.SIGINT)
                ui.wait(timeout=60)
            log.close()
            subprocess.run([CLI, "db", "stop"], env=env, capture_output=True, check=False)
        print(f"processes seen in the window: {len(seen)}")
        for name, times in sorted(by_label.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {sum(times):6.1f} s  {len(times)} x {name}")
        share = 100 * used / elapsed
        print(f"idle ui CPU: {used:.1f} s over {elapsed:.0f} s = {share:.1f}% of a core")
        heartbeats = (home / "ui.log").read_text().count("No heartbeat received")
        print(f"'No heartbeat received' lines in the ui log: {heartbeats}")


if __name__ == "__main__":
    main()
