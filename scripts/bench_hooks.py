"""Hook benchmark (prints its figures; not a test).

1. Relevance: every gold query (the demo set and evaluation/long_conversations) and every
   unrelated prompt (serving/hooks/unrelated_prompts.txt) through the prompt hook's pack, and
   for a range of thresholds: the false-injection rate (unrelated prompts that would inject
   something), the related-prompt injection rate, and the hit rate (related prompts whose
   injection holds a gold turn). This is how HOOK_PROMPT_MIN_COSINE was chosen.
2. Latency on the demo corpus: `memory-pipeline hook prompt` as the agent runs it, a whole new
   process each time (interpreter start included), over N prompts against the resident hook
   server; p50 and p95 of wall time, and how many answered within the deadline. Also the first
   prompt with no server running, and what a cold process doing the work itself takes.

    .venv/bin/python scripts/bench_hooks.py                     # builds temporary homes
    .venv/bin/python scripts/bench_hooks.py --demo-home H1 --long-home H2 --prompts 200
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
sys.path.insert(0, str(REPO))
CLI = str(Path(sys.executable).parent / "memory-pipeline")
LONG = REPO / "evaluation" / "long_conversations"
UNRELATED = REPO / "serving" / "hooks" / "unrelated_prompts.txt"
THRESHOLDS = [0.30, 0.35, 0.40, 0.42, 0.45, 0.48, 0.50, 0.55, 0.60]


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


def build_home(home: Path, extra: dict[str, str]) -> None:
    if (home / "pgdata").exists():
        subprocess.run([CLI, "db", "migrate"], env=_env(home, extra), check=True)
        return
    print(f"building {home} ...", file=sys.stderr)
    subprocess.run([CLI, "run"], env=_env(home, extra), check=True, capture_output=True)


def unrelated_prompts() -> list[str]:
    lines = UNRELATED.read_text().splitlines()
    return [x.strip() for x in lines if x.strip() and not x.startswith("#")]


def _holds_gold(item, gold) -> bool:  # type: ignore[no-untyped-def]
    for g in gold.relevant:
        for chain in item.provenance:
            if (chain.source, chain.native_task_id) != (g.source, g.native_task_id):
                continue
            for turn in chain.turns:
                if g.turn_ordinal is not None and turn.ordinal == g.turn_ordinal:
                    return True
                if g.native_message_id and g.native_message_id in turn.native_message_ids:
                    return True
    return False


def relevance(home: Path, extra: dict[str, str], gold_path: Path) -> dict[str, list]:  # type: ignore[type-arg]
    """Per prompt: the packed memories' best cosines and whether each holds a gold turn."""
    os.environ.update(_env(home, extra))
    from memory_pipeline import tuning
    from memory_pipeline.settings import Settings
    from serving.db import connect_reader
    from serving.evaluation import load_gold
    from serving.hooks import inject
    from serving.hooks.payload import HookEvent

    settings = Settings.from_env()
    embedder = inject.RememberingEmbedder(settings.ollama_host)
    related, unrelated = [], []
    with connect_reader() as conn:
        for gold in load_gold(gold_path):
            event = HookEvent("UserPromptSubmit", gold.query, None, None, None)
            judged = inject.judge(conn, embedder, event, tuning.HOOK_PROMPT_TOKENS)
            items = judged.pack.items if judged else []
            related.append(
                [(judged.cosines[str(i.memory_id)], _holds_gold(i, gold)) for i in items]
            )
        for prompt in unrelated_prompts():
            event = HookEvent("UserPromptSubmit", prompt, None, None, None)
            judged = inject.judge(conn, embedder, event, tuning.HOOK_PROMPT_TOKENS)
            unrelated.append(list(judged.cosines.values()) if judged else [])
    return {"related": related, "unrelated": unrelated}


def print_relevance(name: str, data: dict[str, list]) -> None:  # type: ignore[type-arg]
    rel, unrel = data["related"], data["unrelated"]
    print(f"\n{name}: {len(rel)} gold queries, {len(unrel)} unrelated prompts (budget 400)")
    print("| threshold | false injections | related injected | related hit (gold turn injected) |")
    print("|---|---|---|---|")
    for t in THRESHOLDS:
        false = sum(1 for cs in unrel if any(c >= t for c in cs))
        injected = sum(1 for items in rel if any(c >= t for c, _ in items))
        hit = sum(1 for items in rel if any(c >= t and g for c, g in items))
        print(
            f"| {t:.2f} | {false}/{len(unrel)} ({false / len(unrel):.1%}) "
            f"| {injected / len(rel):.1%} | {hit}/{len(rel)} ({hit / len(rel):.1%}) |"
        )


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def latency(home: Path, prompts: int) -> None:
    from memory_pipeline import tuning
    from memory_pipeline.settings import DEMO_GOLD
    from serving.evaluation import load_gold
    from serving.hooks.client import socket_path

    env = _env(home, {"MEMORY_SOURCES": "demo"})
    queries = [g.query for g in load_gold(DEMO_GOLD)] + unrelated_prompts()
    payloads = [
        json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(REPO), "prompt": q})
        for q in queries
    ]
    if os.path.exists(home / "hook-server.pid") or os.path.exists(socket_path(home)):
        sys.exit(f"a hook server is running for {home}: stop it first (hook-server.pid)")
    (home / "hook-server.starting").unlink(missing_ok=True)
    try:
        # The first prompt with no server running: it starts one and gets nothing.
        t0 = time.perf_counter()
        subprocess.run([CLI, "hook", "prompt"], input=payloads[0].encode(), env=env, check=True)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        while not (home / "hook-server.pid").exists():  # written once the server listens
            time.sleep(0.05)
        ready = time.perf_counter() - t0
        walls, printed = [], 0
        for i in range(prompts):
            t0 = time.perf_counter()
            out = subprocess.run(
                [CLI, "hook", "prompt"],
                input=payloads[i % len(payloads)].encode(),
                env=env,
                capture_output=True,
                check=True,
            )
            walls.append(time.perf_counter() - t0)
            printed += bool(out.stdout)
        late = sum(1 for w in walls if w > tuning.HOOK_PROMPT_DEADLINE_S)
        log = home / "logs" / "hooks.log"
        deadline_lines = log.read_text().count("deadline exceeded") if log.exists() else 0
        print(f"\nlatency, demo corpus, {prompts} prompts, each a new process (cold start)")
        print(f"first prompt with no server: {first:.3f} s (prints nothing, starts the server)")
        print(f"server ready {ready:.2f} s later")
        print(
            f"wall p50 {statistics.median(walls):.3f} s, p95 {_pct(walls, 95):.3f} s, "
            f"max {max(walls):.3f} s; over the {tuning.HOOK_PROMPT_DEADLINE_S} s deadline: "
            f"{late}; injected: {printed}; 'deadline exceeded' log lines: {deadline_lines}"
        )
        cold = []
        code = (
            "import json,sys; from memory_pipeline.settings import Settings;"
            "from serving.hooks.server import HookService;"
            "s=HookService(Settings.from_env());"
            "r=s.answer({'event':'UserPromptSubmit','prompt':sys.argv[1],'seconds':30});"
            "print(bool(r.get('text')))"
        )
        for q in queries[:5]:
            t0 = time.perf_counter()
            cmd = [sys.executable, "-c", code, q]
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            cold.append(time.perf_counter() - t0)
        print(
            f"a cold process doing the work itself (no resident server), 5 prompts: "
            f"p50 {statistics.median(cold):.3f} s, max {max(cold):.3f} s"
        )
    finally:
        pid_file = home / "hook-server.pid"
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), 15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo-home", type=Path)
    parser.add_argument("--long-home", type=Path)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--skip-long", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    demo_home = args.demo_home or tmp / "demo"
    demo_env = {"MEMORY_SOURCES": "demo"}
    long_env = {
        "MEMORY_SOURCES": "real",
        "MEMORY_IMPORT_DIR": str(LONG / "conversations"),
        "MEMORY_SEMANTIC_QUIET_MINUTES": "0",
    }
    from memory_pipeline.settings import DEMO_GOLD

    build_home(demo_home, demo_env)
    print_relevance("demo", relevance(demo_home, demo_env, DEMO_GOLD))
    if not args.skip_long:
        long_home = args.long_home or tmp / "long"
        build_home(long_home, long_env)
        print_relevance("long conversations", relevance(long_home, long_env, LONG / "gold.jsonl"))
    latency(demo_home, args.prompts)


if __name__ == "__main__":
    main()
