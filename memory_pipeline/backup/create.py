"""Making one backup: an encrypted pg_dump, encrypted JSON Lines exports, an encrypted manifest.

Everything is read from one snapshot: a REPEATABLE READ transaction exports its snapshot, pg_dump
runs with `--snapshot`, the exports run in that same transaction and the table checksums in
connections that import the snapshot. So the dump, the exports and the checksums in the manifest
describe exactly the same data even while the sensor keeps capturing, and a restore check can
demand equality. The three run at once (pg_dump and its encryption in a thread, the checksums in
worker connections, the exports here): each is a different process's CPU, and one after the
other they were 26 + 21 + 4 s at 100K memories.

Plaintext never reaches the disk: pg_dump's stdout and each polars batch are written straight into
the streaming encryptor. The backup is assembled in a temp directory (layout.py) and renamed into
place after its manifest; any failure, including an interrupt, removes the temp directory.
"""

from __future__ import annotations

import importlib.metadata
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import psycopg

from memory_pipeline.backup.background import Background
from memory_pipeline.backup.checksums import (
    checksums_in_parallel,
    largest_first,
    pin_output_settings,
    user_tables,
)
from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.crypto import BackupKey, encrypted_output, load_key
from memory_pipeline.backup.errors import BackupError
from memory_pipeline.backup.exports import EXPORT_TABLES, export_table
from memory_pipeline.backup.layout import (
    DUMP_NAME,
    TMP_PREFIX,
    backup_lock,
    dir_bytes,
    fsync_dir,
    new_backup_id,
    remove_stale_temp_dirs,
)
from memory_pipeline.backup.manifest import (
    MANIFEST_FILENAME,
    BackupFile,
    BackupManifest,
    EmbeddingSpace,
    Migration,
    write_manifest,
)
from memory_pipeline.backup.pgtools import (
    PgTools,
    backup_archive_majors,
    check_server_version,
    choose_tools,
    client_conninfo,
    reads,
    stderr_tail,
    unreadable_note,
)
from memory_pipeline.db.connection import connect
from memory_pipeline.tuning import BACKUP_CHUNK_SIZE, BACKUP_DUMP_COMPRESS_LEVEL

Progress = Callable[[str], None]


@dataclass(frozen=True)
class CreatedBackup:
    backup_id: str
    path: Path
    manifest: BackupManifest
    encrypted_bytes: int
    key: BackupKey  # repr shows only its source and fingerprint
    seconds: float
    removed_temp_dirs: tuple[str, ...]  # left by runs that died


def create_backup(
    config: BackupConfig,
    dsn: str,
    *,
    progress: Progress | None = None,
    export_tables: Sequence[str] = EXPORT_TABLES,
    created_at: datetime | None = None,
) -> CreatedBackup:
    """Write one complete backup of the database at `dsn` under config.backup_dir.

    `created_at` (default: now) names the backup and dates it for retention; tests pass one.
    """
    say = progress or (lambda _message: None)
    started = time.monotonic()
    key = load_key(config.key_file, create=True)  # key.created: the caller warns the user
    root = config.backup_dir
    with backup_lock(root):
        tools = _tools(config, dsn, key, say)  # a mismatch with the server stops here
        stale = remove_stale_temp_dirs(root)
        created_at = created_at or datetime.now(UTC)
        backup_id = new_backup_id(root, created_at)
        tmp = root / f"{TMP_PREFIX}{backup_id}-{secrets.token_hex(4)}"
        tmp.mkdir(mode=0o700)
        try:
            manifest = _write_files(tmp, backup_id, created_at, key, tools, dsn, export_tables, say)
            final = root / backup_id
            os.rename(tmp, final)
            fsync_dir(root)
        except BaseException:  # an interrupt or a terminated run must not leave a half backup
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return CreatedBackup(
        backup_id=backup_id,
        path=final,
        manifest=manifest,
        encrypted_bytes=dir_bytes(final),
        key=key,
        seconds=round(time.monotonic() - started, 2),
        removed_temp_dirs=tuple(stale),
    )


def _write_files(
    tmp: Path,
    backup_id: str,
    created_at: datetime,
    key: BackupKey,
    tools: PgTools,
    dsn: str,
    export_tables: Sequence[str],
    say: Progress,
) -> BackupManifest:
    with connect(dsn, autocommit=True) as conn:
        check_server_version(tools, conn.info.server_version)
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        with conn.transaction():
            pin_output_settings(conn)
            snapshot = _one(conn, "SELECT pg_export_snapshot()")
            ordered = largest_first(conn, user_tables(conn))
            with _BackgroundDump(tools, dsn, snapshot, tmp / DUMP_NAME, key) as dump_job:
                stop = threading.Event()
                sums = partial(checksums_in_parallel, dsn, ordered, snapshot=snapshot, cancel=stop)
                with Background("backup-checksums", sums, abort=stop.set) as sums_job:
                    exports = []
                    for table in export_tables:
                        t = time.monotonic()
                        entry = _export(conn, table, tmp, key)
                        say(f"export {table}: {entry.rows} rows in {time.monotonic() - t:.1f}s")
                        exports.append(entry)
                    tables = sums_job.result()
                    say(f"checksums of {len(tables)} tables in {sums_job.seconds:.1f}s")
                dump = dump_job.result()
                say(f"pg_dump: {dump.bytes / 1e6:.1f} MB in {dump_job.seconds:.1f}s")
            files = [dump, *exports]
            migrations = _migrations(conn)
            spaces = _spaces(conn)
        version = conn.info.server_version
        manifest = BackupManifest(
            backup_id=backup_id,
            created_at=created_at,
            app_version=_app_version(),
            migrations=migrations,
            embedding_spaces=spaces,
            files=files,
            tables=tables,
            database=conn.info.dbname,
            server_version=f"{version // 10000}.{version % 10000}",
            pg_dump_version=tools.version,
            completed_at=datetime.now(UTC),
        )
    write_manifest(manifest, tmp / MANIFEST_FILENAME, key)
    return manifest


def _tools(config: BackupConfig, dsn: str, key: BackupKey, say: Progress) -> PgTools:
    """The client programs for this server that can also read the backups already there."""
    with connect(dsn, autocommit=True) as conn:
        server = conn.info.server_version
    archives = backup_archive_majors(config.backup_dir, key)
    tools = choose_tools(config.pg_dump, server, archives.values())
    unreadable = sorted(b for b, major in archives.items() if not reads(tools.major, major))
    if unreadable:
        note = unreadable_note(tools, unreadable[-1], archives[unreadable[-1]], server // 10000)
        say(f"warning: {len(unreadable)} older backup(s) cannot be verified here: {note}")
    return tools


class _BackgroundDump(Background):
    """pg_dump streamed through the encryptor in a thread; abort() kills pg_dump, and the
    partial file is removed by encrypted_output."""

    def __init__(self, tools: PgTools, dsn: str, snapshot: str, dest: Path, key: BackupKey) -> None:
        super().__init__("backup-pg-dump", partial(self._copy, dest, key))
        conninfo, env = client_conninfo(dsn)
        args = [
            str(tools.pg_dump),
            "--format=custom",  # compressed, and pg_restore can pick objects from it
            f"--compress={BACKUP_DUMP_COMPRESS_LEVEL}",  # gzip level: see tuning
            "--no-password",  # never prompt: a scheduled run has no terminal
            f"--snapshot={snapshot}",
            f"--dbname={conninfo}",
        ]
        # stderr holds only pg_dump's messages; an anonymous temp file cannot fill a pipe.
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - closed by __exit__
        self._proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._err, env=env
        )

    def _copy(self, dest: Path, key: BackupKey) -> BackupFile:
        proc = self._proc
        assert proc.stdout is not None
        with encrypted_output(dest, key) as writer:
            shutil.copyfileobj(proc.stdout, writer, BACKUP_CHUNK_SIZE)
            code = proc.wait()
            if code != 0:  # raised inside the block: the partial file is removed
                raise BackupError(f"pg_dump failed (exit status {code}): {stderr_tail(self._err)}")
        assert writer.result is not None
        return BackupFile.from_result(DUMP_NAME, "pg_dump", writer.result)

    def abort(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            assert self._proc.stdout is not None
            self._proc.stdout.close()
            self._err.close()


def _export(conn: psycopg.Connection, table: str, tmp: Path, key: BackupKey) -> BackupFile:
    name = f"{table}.jsonl.enc"
    with encrypted_output(tmp / name, key) as writer:
        rows = export_table(conn, table, writer)
    assert writer.result is not None
    return BackupFile.from_result(name, "jsonl", writer.result, table=table, rows=rows)


def _migrations(conn: psycopg.Connection) -> list[Migration]:
    rows = conn.execute(
        "SELECT version, filename, checksum FROM schema_migrations ORDER BY version"
    ).fetchall()
    return [Migration(version=v, filename=f, checksum=c) for v, f, c in rows]


def _spaces(conn: psycopg.Connection) -> list[EmbeddingSpace]:
    rows = conn.execute(
        "SELECT s.name, count(e.memory_id) FROM embedding_spaces s"
        " LEFT JOIN memory_embeddings e ON e.space = s.name GROUP BY s.name ORDER BY s.name"
    ).fetchall()
    return [EmbeddingSpace(space=name, rows=int(n)) for name, n in rows]


def _one(conn: psycopg.Connection, query: str) -> str:
    row = conn.execute(query).fetchone()  # type: ignore[arg-type]  # constant SQL
    assert row is not None
    return str(row[0])


def _app_version() -> str:
    try:
        return importlib.metadata.version("memory-pipeline")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
