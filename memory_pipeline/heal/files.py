"""Text files under MEMORY_HOME that quote memories or what a session typed, healed like rows.

Which files: dream digests (`dream/`), the hook logs (`logs/`) and the step output Dagster
captured (`dagster/storage/`). What the heal leaves alone, and why: the database's own files
(`pgdata/`, rewritten through SQL), the keyword index (rebuilt from the healed passages),
backups (encrypted; the heal names those made before it and how to replace them), the import
directory (your own source files), and the keys, tokens and URLs the pipeline keeps on purpose
(`backup.key`, `reader-url`, the MCP token).

A file is rewritten only when its text changes, through a temporary file renamed over it (its
mode kept), so a reader never sees half a file. A file that is not UTF-8 text is skipped.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.heal.values import Rewrite
from memory_pipeline.settings import Settings


@dataclass
class FilesResult:
    scanned: int = 0
    rewritten: list[Path] = field(default_factory=list)


def healed_roots(settings: Settings) -> list[Path]:
    return [
        settings.memory_home / "dream",
        settings.log_dir,
        settings.dagster_home / "storage",
    ]


def text_files(settings: Settings) -> Iterator[Path]:
    for root in healed_roots(settings):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                yield path


def rewrite_files(settings: Settings, rewrite: Rewrite, *, dry_run: bool = False) -> FilesResult:
    result = FilesResult()
    for path in text_files(settings):
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        result.scanned += 1
        new = rewrite(text)
        if new == text:
            continue
        result.rewritten.append(path)
        if not dry_run:
            _replace(path, new)
    return result


def _replace(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".heal")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
