"""Time redact() on typical 2 KB turns, whole and layer by layer.

Run: .venv/bin/python scripts/bench_redact.py [--repeat N]

Prints microseconds per call (the median of N rounds) for three kinds of 2 KB turn (an answer in
prose, a code answer, a tool output with paths, hashes and a few secrets) and for each layer of
memory_pipeline/capture/redact/ on them. Timings depend on the machine's load: compare runs
made side by side.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from memory_pipeline.capture.redact import Redactions, redact
from memory_pipeline.capture.redact.blocks import _sub_shapes
from memory_pipeline.capture.redact.context import _sub_context
from memory_pipeline.capture.redact.prose import _sub_prose
from memory_pipeline.capture.redact.providers import _sub_providers
from memory_pipeline.capture.redact.random_tokens import _sub_random

PROSE = (
    "I ran the migration and then restarted the worker pool; the cache hit rate went from 71% to "
    "93% after the change. We decided to keep the rate limits in Postgres because Redis added an "
    "ops burden, and the token budget of the context pack stays at 4,000. See "
    "https://docs.python.org/3/library/re.html for details; version 1.4.2-rc.1 is out. "
)
CODE = (
    "```python\ndef load(path: str) -> dict:\n    with open(path) as f:\n"
    "        return json.load(f)\n\napi_key = os.environ['OPENAI_API_KEY']\n"
    "client = OpenAI(api_key=api_key)\n```\n"
    "commit 3f9a2c1 fixed the flaky test in memory_pipeline_tests/capture/test_store.py.\n"
)
TOOL = (
    "Command: cat .env && sha256sum dist/*.tar.gz\nOutput:\nPORT=3000\nLOG_LEVEL=debug\n"
    "DATABASE_URL=postgresql://billing:Sunflower%2142@db.internal:5432/billing\n"
    "GITHUB_TOKEN=ghp_q8Zr2LmX5vN1pK7wT4yB0cD9eF3gH6jK8lM1\n"
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  dist/app-0.3.0.tar.gz\n"
    "/usr/lib/x86_64-linux-gnu/libssl.so.3 loaded; "
    "request 6f1c2b3a-9d8e-4f70-8a6b-1c2d3e4f5a6b ok\n"
)
TURNS = {
    name: (body * 40)[:2048] for name, body in (("prose", PROSE), ("code", CODE), ("tool", TOOL))
}


def _layers(text: str) -> dict[str, Callable[[], object]]:
    found = Redactions()
    return {
        "(b) keys+headers+URLs": lambda: _sub_shapes(text, found),
        "(a) providers": lambda: _sub_providers(text, found),
        "(b) context": lambda: _sub_context(text, found),
        "(d) prose": lambda: _sub_prose(text, found),
        "(c) random tokens": lambda: _sub_random(text, found),
        "redact() total": lambda: redact(text),
    }


def _time(fn: Callable[[], object], repeat: int, inner: int = 50) -> float:
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        rounds.append((time.perf_counter() - start) / inner * 1e6)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    names = list(_layers("").keys())
    print(f"{'us per 2 KB turn':<24}" + "".join(f"{t:>10}" for t in TURNS))
    results = {
        t: {n: _time(fn, args.repeat) for n, fn in _layers(text).items()}
        for t, text in TURNS.items()
    }
    for name in names:
        print(f"{name:<24}" + "".join(f"{results[t][name]:>10.0f}" for t in TURNS))


if __name__ == "__main__":
    main()
