"""Fuzz the capture parsers with damaged copies of real transcripts (a long run, not a test).

For each parser, hypothesis draws a fixture and damages one to three of its lines
(`memory_pipeline_tests/support/mutations.py`: truncation, byte flips, invalid UTF-8, BOM, NUL,
lone surrogates, nesting 1,000 or 100,000 deep, wrong JSON types, edge timestamps, dropped keys,
lines of 70 KB to 3 MB, a cut inside a multi-byte character, a moved cwd, inserted junk lines),
and the parser's property check runs on it: the same checks the default test run uses for a few
hundred cases (`test_fuzz_<parser>.py`, `test_fuzz_store.py`), here 10,000 per parser by
default. A violated property is counted, not fatal, so one run reports every
failure; the first few are printed, and each failing file is kept for reproduction.

    .venv/bin/python scripts/fuzz_capture.py [--cases N] [--parser NAME] [--seed S]
    make fuzz    # all parsers, 10,000 cases each (CASES=N to change)

NAME is codex, claude_code, chat_import, chat_import_store, codex_store, any other registered
source (its `memory_pipeline_tests/support/fuzz_checks_<source>.py`), or all (the default).
The two `_store` targets put the damaged copy beside its original in a second file (the same
tasks claimed twice) and capture both into a database of their own (an embedded server started
for the run): never merged silently, no stored turn with another turn's text, a second run
changes no row (`memory_pipeline_tests/support/fuzz_checks_store.py`).

Every parser's check includes "no captured turn holds text that was not in its own lines"
(`memory_pipeline_tests/support/own_turns.py`); mutations include a line cut inside a multi-byte
UTF-8 character with lines after it, and a record whose cwd moves to another directory.

Prints, per parser: cases, failures, seconds and the distinct mutation kinds seen. Exit status 0
when every property held, 1 when one failed, 2 when a parser's check module is missing.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the tests' support package is not installed

from memory_pipeline.models.sources import SOURCE_NAMES  # noqa: E402
from memory_pipeline_tests.support.mutations import Mutated, mutated_file  # noqa: E402


@dataclass(frozen=True)
class Parser:
    """Where a parser's property check lives: module, fixture list, original builder, check."""

    module: str
    fixtures: str
    original: str
    check: str
    data: str | None = None  # where fixtures and original live, when not in `module`


PARSERS = {
    "codex": Parser(
        "memory_pipeline_tests.support.fuzz_checks_codex",
        "CODEX_FIXTURES",
        "codex_original",
        "check_codex",
    ),
    "claude_code": Parser(
        "memory_pipeline_tests.support.fuzz_checks_claude_code",
        "CLAUDE_CODE_FIXTURES",
        "original_turns",
        "check_claude_code",
    ),
    "chat_import": Parser(
        "memory_pipeline_tests.support.fuzz_checks_chat_import",
        "CHAT_IMPORT_FIXTURES",
        "chat_import_original",
        "check_chat_import",
    ),
    # The damaged copy beside the original in a second file, captured into a database.
    "chat_import_store": Parser(
        "memory_pipeline_tests.support.fuzz_checks_store",
        "CHAT_IMPORT_FIXTURES",
        "chat_import_original",
        "chat_import_store",
        "memory_pipeline_tests.support.fuzz_checks_chat_import",
    ),
    "codex_store": Parser(
        "memory_pipeline_tests.support.fuzz_checks_store",
        "CODEX_FIXTURES",
        "codex_original",
        "codex_store",
        "memory_pipeline_tests.support.fuzz_checks_codex",
    ),
}
# Every other registered source (memory_pipeline/models/sources.py) is a target by convention:
# `memory_pipeline_tests/support/fuzz_checks_<source>.py` defining FIXTURES (paths), original
# (path -> an object with `.lines`) and check (mutated, original), so a new connector adds its
# check module and touches nothing here.
for _source in SOURCE_NAMES:
    PARSERS.setdefault(
        _source,
        Parser(
            f"memory_pipeline_tests.support.fuzz_checks_{_source}", "FIXTURES", "original", "check"
        ),
    )
SHOWN_FAILURES = 3


class MissingCheck(Exception):
    pass


@dataclass
class Outcome:
    cases: int = 0
    failures: int = 0
    kinds: set[str] = field(default_factory=set)
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0


def load(name: str) -> tuple[list[Any], Callable[[Mutated, Any], None]]:
    """The parser's originals (one per fixture) and its check, or MissingCheck saying why."""
    spec = PARSERS[name]
    try:
        module = importlib.import_module(spec.module)
    except ModuleNotFoundError as exc:
        if exc.name != spec.module:
            raise
        path = spec.module.replace(".", "/") + ".py"
        raise MissingCheck(f"{path} is missing: it must define {spec.check}") from None
    data = importlib.import_module(spec.data) if spec.data else module
    missing = [a for a in (spec.fixtures, spec.original) if not hasattr(data, a)]
    missing += [spec.check] if not hasattr(module, spec.check) else []
    if missing:
        raise MissingCheck(f"{spec.module} does not define {', '.join(missing)}")
    originals = [getattr(data, spec.original)(path) for path in getattr(data, spec.fixtures)]
    if not originals:
        raise MissingCheck(f"{data.__name__}.{spec.fixtures} is empty")
    return originals, getattr(module, spec.check)


def fuzz(name: str, cases: int, run_seed: int, keep: Path) -> Outcome:
    originals, check = load(name)
    outcome = Outcome()

    @hypothesis_seed(run_seed)
    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        phases=[Phase.generate],  # failures are counted, not raised: nothing to shrink
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        original = data.draw(st.sampled_from(originals))
        mutated = data.draw(mutated_file(original.lines))
        outcome.cases += 1
        outcome.kinds.update(mutated.kinds)
        try:
            check(mutated, original)
        except AssertionError as exc:
            outcome.failures += 1
            if len(outcome.examples) < SHOWN_FAILURES:
                keep.mkdir(parents=True, exist_ok=True)
                kept = keep / f"{name}-{outcome.failures}.jsonl"
                kept.write_bytes(mutated.data())
                first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "?"
                outcome.examples.append(f"{first} (file: {kept})")

    started = time.monotonic()
    run()
    outcome.seconds = time.monotonic() - started
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases per parser (10,000)")
    parser.add_argument("--parser", choices=[*PARSERS, "all"], default="all")
    parser.add_argument("--seed", type=int, help="reproduce an earlier run (printed at start)")
    args = parser.parse_args(argv)
    run_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    keep = Path(tempfile.gettempdir()) / f"fuzz-capture-{run_seed}"
    names = list(PARSERS) if args.parser == "all" else [args.parser]
    print(f"seed {run_seed} (--seed to repeat); {args.cases} cases per parser")
    status = 0
    for name in names:
        try:
            outcome = fuzz(name, args.cases, run_seed, keep)
        except MissingCheck as exc:
            print(f"{name}: error: {exc}")
            status = max(status, 2)
            continue
        kinds = sorted(outcome.kinds)
        print(
            f"{name}: {outcome.cases} cases, {outcome.failures} failures, "
            f"{outcome.seconds:.1f} s, {len(kinds)} mutation kinds: {', '.join(kinds)}"
        )
        for example in outcome.examples:
            print(f"  failure: {example}")
        if outcome.failures:
            status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
