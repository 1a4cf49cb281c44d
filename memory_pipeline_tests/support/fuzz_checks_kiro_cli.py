"""`scripts/fuzz_capture.py --parser kiro_cli`: damaged v2 session transcripts and damaged rows
of the SQLite store, checked by `fuzz_checks_kiro.py` (which states both properties)."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline_tests.support import fuzz_checks_kiro as kiro
from memory_pipeline_tests.support.mutations import Mutated

FIXTURES: tuple[Path, ...] = (*kiro.KIRO_CLI_FIXTURES, *kiro.KIRO_STORE_FIXTURES)


def original(path: Path) -> kiro.Original:
    return kiro.store_original(path) if path.name == "rows.json" else kiro.session_original(path)


def check(mutated: Mutated, original: kiro.Original) -> None:
    if original.source.name == "rows.json":
        kiro.check_kiro_cli_store(mutated, original)
    else:
        kiro.check_kiro_cli(mutated, original)
