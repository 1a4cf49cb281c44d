"""Retrieval benchmark (a benchmark that prints its figures, not a test).

For each gold set, in a fresh temporary MEMORY_HOME: import its corpus with
`memory-pipeline run`, then `memory-pipeline eval --json`, and print Recall@5/@10 and MRR of the
full pipeline and the evidence found within 1,000 and 2,000 tokens of the context pack beside the
raw-message baseline. On the demo corpus it also times the production search over the demo gold
queries (after a warm-up) and prints p50 and p95.

    .venv/bin/python scripts/bench_retrieval.py                 # demo and long conversations
    .venv/bin/python scripts/bench_retrieval.py --only demo --repeat 5
    .venv/bin/python scripts/bench_retrieval.py --keep /tmp/bench   # keep the homes there

Gold sets: the demo corpus (`memory_pipeline/demo/gold.jsonl`, MEMORY_SOURCES=demo) and the
long-conversation set (`evaluation/long_conversations/`, imported as chat exports with
MEMORY_SOURCES=real, MEMORY_IMPORT_DIR=<its conversations>, MEMORY_SEMANTIC_QUIET_MINUTES=0).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "memory-pipeline")
LONG = REPO / "evaluation" / "long_conversations"
GOLD_SETS = {
    "demo": {"env": {"MEMORY_SOURCES": "demo"}, "gold": None},
    "long_conversations": {
        "env": {
            "MEMORY_SOURCES": "real",
            "MEMORY_IMPORT_DIR": str(LONG / "conversations"),
            "MEMORY_SEMANTIC_QUIET_MINUTES": "0",
        },
        "gold": LONG / "gold.jsonl",
        # Evaluated on the same import: the harder split (see evaluation/long_conversations).
        "also": {"long_conversations_paraphrase": LONG / "gold_paraphrase.jsonl"},
    },
}


def _env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "DAGSTER_"))}
    env.pop("DATABASE_URL", None)
    env.update(
        {
            "MEMORY_HOME": str(home),
            "CODEX_HOME": str(home / "no-codex"),
            "CLAUDE_CONFIG_DIR": str(home / "no-claude"),
            **extra,
        }
    )
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"memory-pipeline {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return result


def search_latency(env: dict[str, str], repeat: int) -> tuple[float, float, int]:
    """p50 and p95 (ms) of the production search over the demo gold queries, as the CLI runs
    it (limit 10, temporal context), after five warm-up queries; one process, one connection."""
    code = f"""
import json, time
from memory_pipeline.settings import DEMO_GOLD, Settings
from serving.db import connect_reader
from serving.evaluation import load_gold
from serving.search import QueryEmbedder, search
queries = [q.query for q in load_gold(DEMO_GOLD)]
embedder = QueryEmbedder(Settings.from_env().ollama_host)
times = []
with connect_reader() as conn:
    for q in queries[:5]:
        search(conn, q, embedder=embedder)
    for _ in range({repeat}):
        for q in queries:
            t = time.perf_counter()
            search(conn, q, embedder=embedder)
            times.append((time.perf_counter() - t) * 1000)
print(json.dumps(times))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    times = sorted(json.loads(out.stdout))
    p95 = times[max(0, round(0.95 * len(times)) - 1)]
    return statistics.median(times), p95, len(times)


def run_gold_set(name: str, home: Path, repeat: int) -> dict[str, object]:
    spec = GOLD_SETS[name]
    env = _env(home, spec["env"])  # type: ignore[arg-type]
    started = time.perf_counter()
    _cli(env, "run")
    run_s = time.perf_counter() - started
    args = ["eval", "--json"]
    if spec["gold"]:
        args += ["--gold", str(spec["gold"])]
    started = time.perf_counter()
    report = json.loads(_cli(env, *args).stdout)
    out: dict[str, object] = {
        "run_s": round(run_s, 1),
        "eval_s": round(time.perf_counter() - started, 1),
        "queries": report["queries"],
        "scores": report["scores"],
        "evidence": report["evidence"],
    }
    for split, gold in spec.get("also", {}).items():  # type: ignore[attr-defined]
        more = json.loads(_cli(env, "eval", "--json", "--gold", str(gold)).stdout)
        out[split] = {k: more[k] for k in ("queries", "scores", "evidence")}
    if name == "demo":
        out["search_ms"] = search_latency(env, repeat)
    _cli(env, "db", "stop")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(GOLD_SETS), action="append")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the queries")
    parser.add_argument("--keep", type=Path, help="create the homes here and keep them")
    args = parser.parse_args()
    for name in args.only or list(GOLD_SETS):
        if args.keep:
            home = args.keep / name
            home.mkdir(parents=True, exist_ok=False)
            result = run_gold_set(name, home, args.repeat)
        else:
            with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
                result = run_gold_set(name, Path(tmp), args.repeat)
        print_result(name, result)
        for split in GOLD_SETS[name].get("also", {}):  # type: ignore[attr-defined]
            print_result(split, {"run_s": 0, "eval_s": 0, **result[split]})  # type: ignore[dict-item]


def print_result(name: str, r: dict[str, object]) -> None:
    full = r["scores"]["full"]  # type: ignore[index]
    ev = r["evidence"]  # type: ignore[assignment]
    print(f"== {name}: {r['queries']} queries (run {r['run_s']} s, eval {r['eval_s']} s)")
    print(
        f"full pipeline: Recall@5 {full['recall_at_5']:.3f}  Recall@10 {full['recall_at_10']:.3f}"
        f"  MRR {full['mrr']:.3f}"
    )
    print(f"evidence found ({ev['messages']} raw messages in the baseline)")
    print(f"{'budget':<8} {'pack':>7} {'baseline':>9}")
    for budget, value in ev["pack"].items():
        print(f"{budget:<8} {value:>7.3f} {ev['baseline'][budget]:>9.3f}")
    if "search_ms" in r:
        p50, p95, n = r["search_ms"]  # type: ignore[misc]
        print(f"demo search: p50 {p50:.1f} ms, p95 {p95:.1f} ms over {n} searches")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
