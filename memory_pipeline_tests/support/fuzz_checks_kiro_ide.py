"""`scripts/fuzz_capture.py --parser kiro_ide`: damaged Kiro IDE session documents, checked by
`fuzz_checks_kiro.check_kiro_ide` (which states the property)."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline_tests.support import fuzz_checks_kiro as kiro
from memory_pipeline_tests.support.mutations import Mutated

FIXTURES: tuple[Path, ...] = kiro.KIRO_IDE_FIXTURES


def original(path: Path) -> kiro.Original:
    return kiro.ide_original(path)


def check(mutated: Mutated, original: kiro.Original) -> None:
    kiro.check_kiro_ide(mutated, original)
