"""Retrieval benchmark (a benchmark that prints its figures, not a test).

For each gold set, in a fresh temporary MEMORY_HOME: import its corpus with
`memory-pipeline run`, then `memory-pipeline eval --json`, and print Recall@5/@10 and MRR of the
full pipeline and the evidence found within 1,000 and 2,000 tokens of the context pack beside the
raw-message baseline. On the demo corpus it also times the production search over the demo gold
queries (after a warm-up) and prints p50 and p95.

    .venv/bin/python scripts/bench_retrieval.py                 # every gold set
    .venv/bin/python scripts/bench_retrieval.py --only demo --repeat 5
    .venv/bin/python scripts/bench_retrieval.py --keep /tmp/bench   # keep the homes there
    .venv/bin/python scripts/bench_retrieval.py --only oblique_conversations --per-conversation

Gold sets: the demo corpus (`memory_pipeline/demo/gold.jsonl`, MEMORY_SOURCES=demo), and the
long-conversation, oblique-question and spread-over-sessions sets
(`evaluation/long_conversations/`, `evaluation/oblique_conversations/`,
`evaluation/spread_sessions/`, each imported as chat exports with MEMORY_SOURCES=real,
MEMORY_IMPORT_DIR=<its conversations>, MEMORY_SEMANTIC_QUIET_MINUTES=0).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from serving.derivation_evaluation import PrecisionReport
from serving.derivation_evaluation import report_lines as derivation_lines
from serving.evaluation import EvidenceScores, evidence_lines

REPO = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "memory-pipeline")
LONG = REPO / "evaluation" / "long_conversations"
OBLIQUE = REPO / "evaluation" / "oblique_conversations"
SPREAD = REPO / "evaluation" / "spread_sessions"
GOLD_SETS = {
    "demo": {
        "env": {"MEMORY_SOURCES": "demo"},
        "gold": None,
        # The demo's three reversals asked as knowledge updates (the current-value check).
        "also": {"demo_updates": REPO / "memory_pipeline" / "demo" / "gold_updates.jsonl"},
    },
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
    "oblique_conversations": {
        "env": {
            "MEMORY_SOURCES": "real",
            "MEMORY_IMPORT_DIR": str(OBLIQUE / "conversations"),
            "MEMORY_SEMANTIC_QUIET_MINUTES": "0",
        },
        "gold": OBLIQUE / "gold.jsonl",
    },
    "spread_sessions": {
        "env": {
            "MEMORY_SOURCES": "real",
            "MEMORY_IMPORT_DIR": str(SPREAD / "conversations"),
            "MEMORY_SEMANTIC_QUIET_MINUTES": "0",
        },
        "gold": SPREAD / "gold.jsonl",
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


def run_gold_set(name: str, home: Path, repeat: int = 3) -> dict[str, object]:
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
        "derivations": report.get("derivations"),
    }
    for split, gold in spec.get("also", {}).items():  # type: ignore[attr-defined]
        more = json.loads(_cli(env, "eval", "--json", "--gold", str(gold)).stdout)
        out[split] = {k: more[k] for k in ("queries", "scores", "evidence")}
    if name == "demo":
        out["search_ms"] = search_latency(env, repeat)
    _cli(env, "db", "stop")
    return out


def run_per_conversation(name: str, home: Path) -> dict[str, object]:
    """Each conversation of a chat-import gold set in a home of its own, asked only the
    questions about it (as a user with one long conversation would be); the figures pooled over
    every question (each conversation weighs by its questions)."""
    spec = GOLD_SETS[name]
    corpus = Path(spec["env"]["MEMORY_IMPORT_DIR"])  # type: ignore[index]
    lines = Path(spec["gold"]).read_text(encoding="utf-8").splitlines()  # type: ignore[arg-type]
    gold = [json.loads(line) for line in lines if line.strip()]
    reports, run_s, eval_s = [], 0.0, 0.0
    for conv in sorted(corpus.glob("*.jsonl")):
        rows = conv.read_text(encoding="utf-8").splitlines()
        tasks = {json.loads(line)["task_id"] for line in rows if line.strip()}
        mine = [q for q in gold if all(r["native_task_id"] in tasks for r in q["relevant"])]
        own = home / conv.stem
        (own / "import").mkdir(parents=True)
        shutil.copy(conv, own / "import" / conv.name)
        (own / "gold.jsonl").write_text("".join(json.dumps(q) + "\n" for q in mine))
        env = _env(own, {**spec["env"], "MEMORY_IMPORT_DIR": str(own / "import")})  # type: ignore[dict-item]
        started = time.perf_counter()
        _cli(env, "run")
        run_s += time.perf_counter() - started
        started = time.perf_counter()
        reports.append(
            json.loads(_cli(env, "eval", "--json", "--gold", str(own / "gold.jsonl")).stdout)
        )
        eval_s += time.perf_counter() - started
        _cli(env, "db", "stop")
    n = sum(r["queries"] for r in reports)
    per_query = [q for r in reports for q in r["evidence"]["per_query"]]
    budgets = list(reports[0]["evidence"]["pack"])
    return {
        "run_s": round(run_s, 1),
        "eval_s": round(eval_s, 1),
        "queries": n,
        "scores": {
            channel: {
                measure: round(
                    sum(r["scores"][channel][measure] * r["queries"] for r in reports) / n, 4
                )
                for measure in ("recall_at_5", "recall_at_10", "mrr")
            }
            for channel in reports[0]["scores"]
        },
        "evidence": {
            side: {b: round(sum(q[side][b] for q in per_query) / n, 4) for b in budgets}
            for side in ("pack", "baseline", "pack_verbatim", "baseline_verbatim")
        }
        | {"messages": sum(r["evidence"]["messages"] for r in reports), "per_query": per_query},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(GOLD_SETS), action="append")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the queries")
    parser.add_argument("--keep", type=Path, help="create the homes here and keep them")
    parser.add_argument(
        "--per-conversation",
        action="store_true",
        help="conversation sets: also import each conversation alone in a home of its own",
    )
    args = parser.parse_args()
    for name in args.only or list(GOLD_SETS):
        runs = [(name, partial(run_gold_set, name, repeat=args.repeat))]
        if args.per_conversation and "MEMORY_IMPORT_DIR" in GOLD_SETS[name]["env"]:  # type: ignore[operator]
            runs.append(
                (
                    f"{name}, one home per conversation",
                    partial(run_per_conversation, name),
                )
            )
        for label, run in runs:
            if args.keep:
                home = args.keep / label.replace(", ", "-").replace(" ", "_")
                home.mkdir(parents=True, exist_ok=False)
                result = run(home=home)
            else:
                with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
                    result = run(home=Path(tmp))
            print_result(label, result)
            for split in GOLD_SETS[name].get("also", {}) if label == name else ():  # type: ignore[attr-defined]
                print_result(split, {"run_s": 0, "eval_s": 0, **result[split]})  # type: ignore[dict-item]


def print_result(name: str, r: dict[str, object]) -> None:
    full = r["scores"]["full"]  # type: ignore[index]
    ev = r["evidence"]  # type: ignore[assignment]
    print(f"== {name}: {r['queries']} queries (run {r['run_s']} s, eval {r['eval_s']} s)")
    print(
        f"full pipeline: Recall@5 {full['recall_at_5']:.3f}  Recall@10 {full['recall_at_10']:.3f}"
        f"  MRR {full['mrr']:.3f}"
    )
    scores = EvidenceScores.model_validate({"unresolved": 0, **ev})
    for line in evidence_lines(scores):
        print(line)
    if r.get("derivations"):
        derived = PrecisionReport.model_validate(r["derivations"])
        print("\n".join(derivation_lines(derived)))
    if "search_ms" in r:
        p50, p95, n = r["search_ms"]  # type: ignore[misc]
        print(f"demo search: p50 {p50:.1f} ms, p95 {p95:.1f} ms over {n} searches")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
