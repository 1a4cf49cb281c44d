"""Backup at scale: dump, export and encrypt (`run_backup`), then verify (`verify_backup`).

The corpus is P1's generated one (`load_corpus`) in a database of its own; the backup goes to a
temporary directory with a generated key, and both steps are the functions `memory-pipeline
backup now` runs. Target (issue 12): both together within 120 s at 100K memories. Verify
restores into a scratch database without the vector indexes (see backup/restore.py); a real
restore rebuilds them and is not timed here. The backup runs pg_dump, the table checksums and the
exports at once, and verify its checksums and re-exports at once: on 2 cores the figure depends
on how busy the machine is, so it is printed with the load average.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memory_pipeline.bench.report import Figure

Progress = Callable[[str], None]

TARGET_S = 120.0


def run(scale: int, progress: Progress) -> list[Figure]:
    from memory_pipeline.backup.config import BackupConfig
    from memory_pipeline.backup.operations import run_backup
    from memory_pipeline.backup.restore import verify_backup
    from memory_pipeline.bench.corpus import bench_database, load_corpus

    with bench_database(progress) as url, tempfile.TemporaryDirectory(prefix="mp-bench-bk-") as tmp:
        info = load_corpus(url, scale, progress=progress)
        progress(f"corpus: {info.memories:,} memories, {info.passages:,} passages")
        config = BackupConfig(
            backup_dir=Path(tmp) / "backups",
            key_file=Path(tmp) / "backup.key",
            keep_daily=7,
            keep_weekly=4,
        )
        t = time.monotonic()
        backup = run_backup(config, url, progress=progress).backup
        made = time.monotonic() - t
        t = time.monotonic()
        report = verify_backup(config, url, backup.backup_id, progress=progress)
        verified = time.monotonic() - t
    if not report.passed:
        raise RuntimeError(f"verify failed: {'; '.join(report.problems)}")
    total = made + verified
    return [
        Figure("memories", info.memories, ""),
        Figure("backup size (encrypted)", round(backup.encrypted_bytes / 1e6, 1), "MB"),
        Figure("dump + export + encrypt", round(made, 1), "s"),
        Figure(
            f"verify (restore without {len(report.skipped_indexes)} vector indexes, compare)",
            round(verified, 1),
            "s",
        ),
        Figure("backup + verify", round(total, 1), "s", f"<= {TARGET_S:g} s", total <= TARGET_S),
    ]
