"""Restoring a backup into a database, and proving a backup restores (the verify check).

Both stream the encrypted dump through the decryptor into `pg_restore` on stdin: no plaintext
file. Each chunk is authenticated before pg_restore sees it, and pg_restore runs in a single
transaction, so a tampered or truncated dump aborts it (the process is killed before its input
ends) and commits nothing. After the restore, the restored database is compared with the manifest:
row count and content checksum of every table, the applied migrations, and the JSON Lines exports
recomputed from the restored data against the sha256s of the exported files.

Verify restores into a scratch database `<db>_verify_<random>` on the same server and always drops
it. A named restore also goes to a staging database first and replaces the target only after the
comparison passed: a failed restore never costs the database that was there.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from memory_pipeline.backup.checksums import compare_tables, pin_output_settings, table_checksums
from memory_pipeline.backup.config import BackupConfig
from memory_pipeline.backup.crypto import (
    BackupCryptoError,
    BackupKey,
    WrongKeyError,
    decrypt_to_stream,
    load_key,
    verify_file,
)
from memory_pipeline.backup.errors import RestoreError
from memory_pipeline.backup.exports import HashingSink, export_table
from memory_pipeline.backup.layout import (
    MANIFEST_FILENAME,
    VERIFICATION_NAME,
    Verification,
    backup_lock,
    manifest_digest,
    resolve_backup,
    write_verification,
)
from memory_pipeline.backup.manifest import BackupManifest, ManifestError, read_manifest
from memory_pipeline.backup.pgtools import PgTools, client_conninfo, pg_tools, stderr_tail
from memory_pipeline.db.connection import CONNECT_TIMEOUT_S, connect

Progress = Callable[[str], None]
_MAX_DBNAME = 63  # NAMEDATALEN - 1
_SYSTEM_DATABASES = {"postgres", "template0", "template1"}


@dataclass(frozen=True)
class RestoreReport:
    backup_id: str
    database: str  # where it was restored (dropped again after a verify)
    problems: tuple[str, ...] = ()
    tables: int = 0
    rows: int = 0
    seconds: float = 0.0
    schema_version: str | None = None

    @property
    def passed(self) -> bool:
        return not self.problems


def verify_backup(
    config: BackupConfig,
    dsn: str,
    backup: str | Path | None = None,
    *,
    progress: Progress | None = None,
) -> RestoreReport:
    """Restore a backup (default: the newest) into a scratch database and compare; record it.

    Damage found in the backup (a file failing authentication, a checksum or count that differs)
    makes a failed report, which is recorded in the backup's verification file. A missing or
    wrong key raises instead and records nothing: that is not the backup's fault.
    """
    say = progress or (lambda _message: None)
    started = time.monotonic()
    key = load_key(config.key_file, create=False)
    tools = pg_tools(config.pg_dump)
    with backup_lock(config.backup_dir):
        path = resolve_backup(config.backup_dir, None if backup is None else str(backup))
        say(f"verifying backup {path.name}")
        try:
            manifest = read_manifest(path / MANIFEST_FILENAME, key)
        except WrongKeyError as exc:
            # Most likely the key, not the backup: record nothing that would brand it bad.
            raise RestoreError(str(exc)) from exc
        except (BackupCryptoError, ManifestError) as exc:
            return _record(path, key, started, problems=[str(exc)])
        problems = _check_files(path, manifest, key)
        with _admin(dsn) as admin:
            scratch = _scratch_name(admin.info.dbname, "verify")
            _create_database(admin, scratch)
            try:
                say(f"restoring into scratch database {scratch}")
                problems += _restore_and_compare(tools, key, path, manifest, dsn, scratch, say)
            finally:
                _drop_database(admin, scratch)
        return _record(path, key, started, problems=problems, manifest=manifest)


def restore_backup(
    config: BackupConfig,
    dsn: str,
    backup: str | Path,
    target: str,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> RestoreReport:
    """Restore `backup` into database `target` on the server of `dsn` (created if missing).

    A non-empty target is refused unless `force`; with it, the target is dropped and replaced,
    but only after the restore into a staging database matched the manifest.
    """
    say = progress or (lambda _message: None)
    started = time.monotonic()
    _check_target_name(target)
    key = load_key(config.key_file, create=False)
    tools = pg_tools(config.pg_dump)
    path = resolve_backup(config.backup_dir, str(backup))
    try:
        manifest = read_manifest(path / MANIFEST_FILENAME, key)
    except (BackupCryptoError, ManifestError) as exc:
        raise RestoreError(str(exc)) from exc
    _refuse_non_empty(dsn, target, force)
    problems = _check_files(path, manifest, key)
    if problems:
        raise RestoreError(f"backup {path.name} is damaged: {problems[0]}")
    staging = _scratch_name(target, "restore")
    with _admin(dsn, avoid=target) as admin:
        _create_database(admin, staging)
    try:
        say(f"restoring {path.name} into staging database {staging}")
        problems = _restore_and_compare(tools, key, path, manifest, dsn, staging, say)
        if problems:
            raise RestoreError(
                f"the restored data does not match backup {path.name}: {'; '.join(problems[:3])}"
            )
        with _admin(dsn, avoid=target) as admin:
            _refuse_non_empty(dsn, target, force)  # again: it may have changed meanwhile
            _replace_database(admin, staging, target)
    except BaseException:
        with _admin(dsn, avoid=target) as admin:
            _drop_database(admin, staging)
        raise
    say(f"restored {path.name} into database {target}")
    return RestoreReport(
        backup_id=path.name,
        database=target,
        tables=len(manifest.tables),
        rows=sum(t.rows for t in manifest.tables),
        seconds=round(time.monotonic() - started, 2),
        schema_version=manifest.schema_version,
    )


# --- the shared core ----------------------------------------------------------------------


def _check_files(path: Path, manifest: BackupManifest, key: BackupKey) -> list[str]:
    """Authenticate every export and compare its sha256; the dump is checked while restoring."""
    problems = []
    for entry in manifest.files:
        file = path / entry.name
        if not file.is_file():
            problems.append(f"{entry.name} is missing")
            continue
        if entry.kind == "pg_dump":
            continue
        try:
            result = verify_file(file, key)
        except BackupCryptoError as exc:
            problems.append(str(exc))
            continue
        if result.plaintext_sha256 != entry.sha256 or result.plaintext_bytes != entry.bytes:
            problems.append(f"{entry.name} does not match the manifest's checksum")
    known = {f.name for f in manifest.files} | {MANIFEST_FILENAME, VERIFICATION_NAME}
    problems.extend(
        f"{p.name} is not listed in the manifest"
        for p in sorted(path.iterdir())
        if p.name not in known and not p.name.endswith(".tmp")
    )
    return problems


def _restore_and_compare(
    tools: PgTools,
    key: BackupKey,
    path: Path,
    manifest: BackupManifest,
    dsn: str,
    dbname: str,
    say: Progress,
) -> list[str]:
    t = time.monotonic()
    try:
        _pg_restore(tools, key, path, manifest, dsn, dbname)
    except (RestoreError, BackupCryptoError, ManifestError, OSError) as exc:
        return [str(exc)]  # OSError: e.g. the dump file is missing (also reported by name)
    say(f"pg_restore: {time.monotonic() - t:.1f}s")
    t = time.monotonic()
    problems = _compare(manifest, make_conninfo(dsn, dbname=dbname))
    say(f"compared {len(manifest.tables)} tables and the exports: {time.monotonic() - t:.1f}s")
    return problems


def _pg_restore(
    tools: PgTools, key: BackupKey, path: Path, manifest: BackupManifest, dsn: str, dbname: str
) -> None:
    entry = manifest.dump
    conninfo, env = client_conninfo(dsn, dbname)
    args = [
        str(tools.pg_restore),
        "--no-owner",  # objects belong to whoever restores, whatever role owned them before
        "--single-transaction",  # all or nothing
        "--exit-on-error",
        "--no-password",
        f"--dbname={conninfo}",
    ]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env
        )
        assert proc.stdin is not None
        try:
            try:
                result = decrypt_to_stream(path / entry.name, proc.stdin, key)
            except BrokenPipeError:
                result = None  # pg_restore stopped reading; its exit status says why
            if result is not None and (
                result.plaintext_sha256 != entry.sha256 or result.plaintext_bytes != entry.bytes
            ):
                raise RestoreError(f"{entry.name} does not match the manifest's checksum")
        except BaseException:
            proc.kill()  # before its input ends: the single transaction is never committed
            proc.wait()
            raise
        finally:
            try:
                proc.stdin.close()  # end of input: pg_restore finishes and commits
            except BrokenPipeError:
                pass
        code = proc.wait()
        if code != 0:
            raise RestoreError(f"pg_restore failed (exit status {code}): {stderr_tail(err)}")


def _compare(manifest: BackupManifest, restored: str) -> list[str]:
    with connect(restored, autocommit=True) as conn, conn.transaction():
        pin_output_settings(conn)
        problems = compare_tables(manifest.tables, table_checksums(conn))
        applied = conn.execute("SELECT version, checksum FROM schema_migrations ORDER BY version")
        expected = [(m.version, m.checksum) for m in manifest.migrations]
        if [tuple(r) for r in applied.fetchall()] != expected:
            problems.append("the restored schema_migrations differ from the manifest")
        for entry in manifest.files:
            if entry.kind != "jsonl" or entry.table is None:
                continue
            sink = HashingSink()
            rows = export_table(conn, entry.table, sink)
            if rows != entry.rows or sink.sha256 != entry.sha256:
                problems.append(
                    f"{entry.table} exported from the restored database differs from"
                    f" {entry.name} ({rows} rows, the backup had {entry.rows})"
                )
    return problems


def _record(
    path: Path,
    key: BackupKey,
    started: float,
    *,
    problems: list[str],
    manifest: BackupManifest | None = None,
) -> RestoreReport:
    seconds = round(time.monotonic() - started, 2)
    tables = len(manifest.tables) if manifest else 0
    rows = sum(t.rows for t in manifest.tables) if manifest else 0
    if (path / MANIFEST_FILENAME).exists():
        record = Verification(
            backup_id=path.name,
            manifest_sha256=manifest_digest(path),
            verified_at=datetime.now(UTC),
            passed=not problems,
            problems=problems,
            tables=tables,
            rows=rows,
            seconds=seconds,
        )
        write_verification(path, record, key)
    return RestoreReport(
        backup_id=path.name,
        database="(scratch, dropped)",
        problems=tuple(problems),
        tables=tables,
        rows=rows,
        seconds=seconds,
        schema_version=manifest.schema_version if manifest else None,
    )


# --- databases ----------------------------------------------------------------------------


@contextmanager
def _admin(dsn: str, avoid: str | None = None) -> Iterator[psycopg.Connection]:
    """An autocommit connection for CREATE/DROP DATABASE, never to the database `avoid`."""
    conn = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    if avoid is not None and conn.info.dbname == avoid:
        conn.close()
        conn = psycopg.connect(
            make_conninfo(dsn, dbname="postgres"),
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
        )
    try:
        yield conn
    finally:
        conn.close()


def _scratch_name(base: str, purpose: str) -> str:
    return f"{base[:40]}_{purpose}_{secrets.token_hex(4)}"


def _check_target_name(target: str) -> None:
    if not target or len(target.encode()) > _MAX_DBNAME or "\x00" in target:
        raise RestoreError(f"{target!r} is not a valid database name (1 to {_MAX_DBNAME} bytes)")
    if target in _SYSTEM_DATABASES:
        raise RestoreError(f"refusing to restore into the system database {target!r}")


def _create_database(admin: psycopg.Connection, name: str) -> None:
    # template0: a clean database whatever extensions template1 has; same encoding as ours.
    encoding = admin.execute(
        "SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = current_database()"
    ).fetchone()
    query = sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING {}").format(
        sql.Identifier(name), sql.Literal(encoding[0] if encoding else "UTF8")
    )
    try:
        admin.execute(query)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise RestoreError(
            f"this role may not create databases (needed for {name}); grant it CREATEDB or"
            " restore as a role that has it"
        ) from exc


def _drop_database(admin: psycopg.Connection, name: str) -> None:
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _replace_database(admin: psycopg.Connection, staging: str, target: str) -> None:
    # Autovacuum may just have connected to the freshly loaded staging database; RENAME needs it
    # empty of sessions, so close it to new ones, end the sessions, rename, and open it again.
    staging_id, target_id = sql.Identifier(staging), sql.Identifier(target)
    admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(staging_id))
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = %s AND pid <> pg_backend_pid()",
        [staging],
    )
    _drop_database(admin, target)
    admin.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(staging_id, target_id))
    admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(target_id))


def _refuse_non_empty(dsn: str, target: str, force: bool) -> None:
    if force:
        return
    try:
        conn = psycopg.connect(
            make_conninfo(dsn, dbname=target), autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
        )
    except psycopg.OperationalError as exc:
        with _admin(dsn, avoid=target) as admin:
            exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [target])
            if exists.fetchone() is None:
                return  # a new database: nothing to overwrite
        raise RestoreError(
            f"cannot connect to database {target} to check it is empty: {exc}"
        ) from exc
    with conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
            " AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'"
        ).fetchone()
    if row and row[0]:
        raise RestoreError(
            f"database {target} is not empty; pass --force to replace it (it is dropped only"
            " after the backup restored and matched its manifest)"
        )
