"""Restoring a backup into a database, and proving a backup restores (the verify check).

Both stream the encrypted dump through the decryptor into `pg_restore` on stdin: no plaintext
file. Each chunk is authenticated before pg_restore sees it, and pg_restore runs in a single
transaction, so a tampered or truncated dump aborts it (the process is killed before its input
ends) and commits nothing. After the restore, the restored database is compared with the manifest:
row count and content checksum of every table, the applied migrations, and the JSON Lines exports
recomputed from the restored data against the sha256s of the exported files.

Verify restores into a scratch database `<db>_verify_<random>` on the same server and always drops
it (in a `finally`; one left by a killed process is dropped by the next start: scratch.py). It
leaves the vector (HNSW) indexes out of that restore: building them over every vector was most
of a verify's time (100 s at 100K memories), and the comparison reads only the data; a real
restore rebuilds them. A named restore also goes to a staging database first and replaces the
target only after the comparison passed: a failed restore never costs the database that was there.
Its staging database `<target>_restore_<random>` is claimed and marked like a scratch database
(scratch.py), so one a killed restore left is dropped by the next start too.
The comparison's two halves run at once (table checksums over BACKUP_CHECKSUM_WORKERS connections
in a thread, the exports recomputed here), and so do the exports' authentication and the restore.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from memory_pipeline.backup.background import Background
from memory_pipeline.backup.checksums import (
    checksums_in_parallel,
    compare_tables,
    largest_first,
    pin_output_settings,
    user_tables,
)
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
from memory_pipeline.backup.pgtools import (
    PgTools,
    archive_major,
    choose_tools,
    client_conninfo,
    reads,
    stderr_tail,
    unreadable_note,
)
from memory_pipeline.backup.scratch import (
    RESTORE_PURPOSE,
    VERIFY_PURPOSE,
    claimed,
    drop_abandoned,
    dropped_line,
    mark_staging,
)
from memory_pipeline.db.connection import CONNECT_TIMEOUT_S, connect, sql_ident
from memory_pipeline.tuning import BACKUP_TEMPLATE_BUSY_RETRIES, BACKUP_TEMPLATE_BUSY_WAIT_S

Progress = Callable[[str], None]
_MAX_DBNAME = 63  # NAMEDATALEN - 1
_SYSTEM_DATABASES = {"postgres", "template0", "template1"}
# Tables migrations fill themselves: rows there are not data a restore could overwrite.
_SEEDED_BY_MIGRATIONS = frozenset(
    {
        "schema_migrations",
        "embedding_spaces",
        "passage_postings_params",
        "search_index_identity",
        "redaction_state",  # sql/026: the rules last applied (a fresh home records them)
    }
)


@dataclass(frozen=True)
class RestoreReport:
    backup_id: str
    database: str  # where it was restored (dropped again after a verify)
    problems: tuple[str, ...] = ()
    tables: int = 0
    rows: int = 0
    seconds: float = 0.0
    schema_version: str | None = None
    # Vector (HNSW/IVFFlat) indexes a verify left out of its scratch restore: see _pg_restore.
    skipped_indexes: tuple[str, ...] = ()

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
        # The exports are authenticated while the dump restores: different processes' CPU.
        files = Background("verify-files", partial(_check_files, path, manifest, key))
        with files, _admin(dsn) as admin:
            tools = _tools_for(config, admin, path.name, manifest)
            skipped = _vector_indexes(admin)
            for left in drop_abandoned(admin):  # by verifications that were killed
                say(dropped_line(left))
            scratch = _scratch_name(admin.info.dbname, VERIFY_PURPOSE)
            # Claimed before it exists, until it is gone: a killed process's lock ends with its
            # session, which is how the next start knows this database was left behind.
            with claimed(admin, scratch):
                _create_database(admin, dsn, scratch)
                try:
                    say(f"restoring into scratch database {scratch}")
                    restored = _restore_and_compare(
                        tools, key, path, manifest, dsn, scratch, say, skip_indexes=skipped
                    )
                finally:
                    _drop_database(admin, scratch)
            problems = files.result() + restored
        report = _record(path, key, started, problems=problems, manifest=manifest)
        return replace(report, skipped_indexes=tuple(sorted(skipped)))


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
    path = resolve_backup(config.backup_dir, str(backup))
    try:
        manifest = read_manifest(path / MANIFEST_FILENAME, key)
    except (BackupCryptoError, ManifestError) as exc:
        raise RestoreError(str(exc)) from exc
    with _admin(dsn, avoid=target) as admin:
        tools = _tools_for(config, admin, path.name, manifest)
    _refuse_non_empty(dsn, target, force, manifest)
    problems = _check_files(path, manifest, key)
    if problems:
        raise RestoreError(f"backup {path.name} is damaged: {problems[0]}")
    staging = _scratch_name(target, RESTORE_PURPOSE)
    # The staging database's lock lives in our own database (the one `dsn` names), where the
    # next start looks for it; that session may be in `target` itself (restoring over the live
    # database), and then it ends when the target is replaced, after which no lock is needed.
    with _admin(dsn) as holder:
        for left in drop_abandoned(holder):  # by restores and verifications that were killed
            say(dropped_line(left))
        with claimed(holder, staging):
            with _admin(dsn, avoid=target) as admin:
                _create_database(admin, dsn, staging)
                mark_staging(admin, staging, holder.info.dbname)
            try:
                say(f"restoring {path.name} into staging database {staging}")
                problems = _restore_and_compare(tools, key, path, manifest, dsn, staging, say)
                if problems:
                    raise RestoreError(
                        f"the restored data does not match backup {path.name}: "
                        f"{'; '.join(problems[:3])}"
                    )
                with _admin(dsn, avoid=target) as admin:
                    _refuse_non_empty(dsn, target, force, manifest)  # again: it may have changed
                    _replace_database(admin, staging, target)
            finally:  # renamed over the target, or dropped: never left behind
                with _admin(dsn, avoid=target) as admin:
                    _drop_database(admin, staging)
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
    skip_indexes: frozenset[str] = frozenset(),
) -> list[str]:
    t = time.monotonic()
    try:
        left_out = _pg_restore(tools, key, path, manifest, dsn, dbname, skip_indexes)
    except (RestoreError, BackupCryptoError, ManifestError, OSError) as exc:
        return [str(exc)]  # OSError: e.g. the dump file is missing (also reported by name)
    note = f" ({left_out} vector indexes not rebuilt for the check)" if left_out else ""
    say(f"pg_restore: {time.monotonic() - t:.1f}s{note}")
    t = time.monotonic()
    problems = _compare(manifest, make_conninfo(dsn, dbname=dbname))
    say(f"compared {len(manifest.tables)} tables and the exports: {time.monotonic() - t:.1f}s")
    return problems


def _pg_restore(
    tools: PgTools,
    key: BackupKey,
    path: Path,
    manifest: BackupManifest,
    dsn: str,
    dbname: str,
    skip_indexes: frozenset[str] = frozenset(),
) -> int:
    """Restore the dump into `dbname`; returns how many archive entries were left out of
    `skip_indexes` (the verify check passes the vector indexes: building HNSW over every vector
    was most of a verify's time, and the comparison reads only the data)."""
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
    left_out = 0
    with tempfile.TemporaryDirectory(prefix="memory-restore-list-") as workdir:
        skip_extension = _extension_owned_by_another_role(make_conninfo(dsn, dbname=dbname))
        if skip_extension or skip_indexes:
            toc = _toc_listing(tools, key, path, manifest, env)
            lines = []
            for ln in toc:
                index = _INDEX_ENTRY.match(ln)
                if (skip_extension and _EXTENSION_ENTRY.match(ln)) or (
                    index and index.group(1) in skip_indexes
                ):
                    left_out += bool(index)
                    ln = f";{ln}"
                lines.append(ln)
            listing = Path(workdir) / "toc.list"
            listing.write_text("\n".join(lines) + "\n")
            args.append(f"--use-list={listing}")
        _run_pg_restore(args, env, key, path / entry.name, entry.sha256, entry.bytes)
    return left_out


def _run_pg_restore(
    args: list[str], env: dict[str, str], key: BackupKey, dump: Path, sha256: str, size: int
) -> None:
    """Stream the decrypted dump into pg_restore; kill it before the end on any mismatch."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env
        )
        assert proc.stdin is not None
        try:
            try:
                result = decrypt_to_stream(dump, proc.stdin, key)
            except BrokenPipeError:
                result = None  # pg_restore stopped reading; its exit status says why
            if result is not None and (
                result.plaintext_sha256 != sha256 or result.plaintext_bytes != size
            ):
                raise RestoreError(f"{dump.name} does not match the manifest's checksum")
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


def _extension_owned_by_another_role(conninfo: str) -> bool:
    """pgvector exists in the target and belongs to someone else (an administrator).

    Then the dump's `COMMENT ON EXTENSION vector` would fail (only the owner may comment), so
    the extension's two archive entries are left out: the extension is already there.
    """
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
        row = conn.execute(
            "SELECT e.extowner <> (SELECT oid FROM pg_roles WHERE rolname = current_user)"
            " AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
            " FROM pg_extension e WHERE e.extname = 'vector'"
        ).fetchone()
    return bool(row and row[0])


_EXTENSION_ENTRY = re.compile(r"^\d+; \d+ \d+ (?:COMMENT - )?EXTENSION (?:- )?vector\b")
# `4321; 1259 16800 INDEX public memory_embeddings_minilm_384_hnsw owner`
_INDEX_ENTRY = re.compile(r"^\d+; \d+ \d+ INDEX \S+ (\S+) ")


def _vector_indexes(admin: psycopg.Connection) -> frozenset[str]:
    """Names of the HNSW/IVFFlat indexes in the database being backed up (the archive's list
    names an index but not its method; the schema is the same one, migrated by the code)."""
    rows = admin.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_am a ON a.oid = c.relam"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind = 'i' AND a.amname IN ('hnsw', 'ivfflat') AND n.nspname = 'public'"
    ).fetchall()
    return frozenset(r[0] for r in rows)


def _toc_listing(
    tools: PgTools, key: BackupKey, path: Path, manifest: BackupManifest, env: dict[str, str]
) -> list[str]:
    """The dump's table of contents (`pg_restore --list`), one entry a line."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [str(tools.pg_restore), "--list"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            env=env,
        )
        assert proc.stdin is not None
        try:
            try:
                decrypt_to_stream(path / manifest.dump.name, proc.stdin, key)
            except BrokenPipeError:
                pass  # it read the table of contents and stopped: all it needs
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
        if proc.wait() != 0:
            raise RestoreError(f"pg_restore --list failed: {stderr_tail(err)}")
        out.seek(0)
        return out.read().decode("utf-8", errors="replace").splitlines()


def _tools_for(
    config: BackupConfig, admin: psycopg.Connection, backup_id: str, manifest: BackupManifest
) -> PgTools:
    """The client programs that restore this backup into this server, or why none can."""
    archive = archive_major(manifest.pg_dump_version)
    server = admin.info.server_version
    tools = choose_tools(config.pg_dump, server, [archive])
    if not reads(tools.major, archive):
        raise RestoreError(unreadable_note(tools, backup_id, archive, server // 10000))
    return tools


def _compare(manifest: BackupManifest, restored: str) -> list[str]:
    """The restored tables' checksums (worker connections, in a thread) and the exports
    recomputed from them (here) at once: each is mostly the server's CPU, in other processes."""
    with connect(restored, autocommit=True) as conn, conn.transaction():
        pin_output_settings(conn)
        stop = threading.Event()
        tables = largest_first(conn, user_tables(conn))
        work = partial(checksums_in_parallel, restored, tables, cancel=stop)
        with Background("verify-checksums", work, abort=stop.set) as sums:
            problems = _compare_exports(conn, manifest)
            problems = compare_tables(manifest.tables, sums.result()) + problems
        applied = conn.execute("SELECT version, checksum FROM schema_migrations ORDER BY version")
        expected = [(m.version, m.checksum) for m in manifest.migrations]
        if [tuple(r) for r in applied.fetchall()] != expected:
            problems.append("the restored schema_migrations differ from the manifest")
    return problems


def _compare_exports(conn: psycopg.Connection, manifest: BackupManifest) -> list[str]:
    problems = []
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


def _create_database(admin: psycopg.Connection, dsn: str, name: str) -> None:
    """A new empty database with pgvector, for a restore (scratch, staging or target).

    A role that may create pgvector (a superuser) gets a clean copy of template0 and creates the
    extension itself. Any other role gets a copy of template1, where an administrator enabled
    pgvector once; without it no restore can work, and the error says what to run.
    """
    if _can_create_vector(admin):
        encoding = admin.execute(
            "SELECT pg_encoding_to_char(encoding) FROM pg_database"
            " WHERE datname = current_database()"
        ).fetchone()
        _create(
            admin,
            sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING {}").format(
                sql.Identifier(name), sql.Literal(encoding[0] if encoding else "UTF8")
            ),
            name,
        )
        with psycopg.connect(make_conninfo(dsn, dbname=name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return
    _create(
        admin, sql.SQL("CREATE DATABASE {} TEMPLATE template1").format(sql.Identifier(name)), name
    )
    with psycopg.connect(make_conninfo(dsn, dbname=name), autocommit=True) as conn:
        has_vector = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    if not has_vector:
        _drop_database(admin, name)
        raise RestoreError(
            f"role {admin.info.user} may not enable pgvector in the new database {name}, and "
            "template1 (which new databases copy) lacks it; an administrator runs once: "
            "psql -d template1 -c 'CREATE EXTENSION vector'"
        )


def _can_create_vector(admin: psycopg.Connection) -> bool:
    row = admin.execute(
        "SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
        " OR coalesce((SELECT v.trusted FROM pg_available_extensions a"
        "   JOIN pg_available_extension_versions v"
        "   ON v.name = a.name AND v.version = a.default_version WHERE a.name = 'vector'), false)"
    ).fetchone()
    return bool(row and row[0])


def _create(admin: psycopg.Connection, query: sql.Composed, name: str) -> None:
    """CREATE DATABASE, waiting briefly while someone else is connected to the template."""
    for attempt in range(BACKUP_TEMPLATE_BUSY_RETRIES + 1):
        try:
            admin.execute(query)
            return
        except psycopg.errors.InsufficientPrivilege as exc:
            role = admin.info.user
            raise RestoreError(
                f"role {role} may not create databases (needed for {name}); an administrator "
                f"runs once: ALTER ROLE {sql_ident(role)} CREATEDB;"
            ) from exc
        except psycopg.errors.ObjectInUse:
            if attempt == BACKUP_TEMPLATE_BUSY_RETRIES:
                raise RestoreError(
                    f"cannot create database {name}: its template is in use by another session;"
                    " try again in a moment"
                ) from None
            time.sleep(BACKUP_TEMPLATE_BUSY_WAIT_S)


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
    admin.execute(sql.SQL("COMMENT ON DATABASE {} IS NULL").format(target_id))  # staging no more


def _refuse_non_empty(
    dsn: str, target: str, force: bool, manifest: BackupManifest | None = None
) -> None:
    """Refuse a target that holds data, unless `force`.

    Empty means: no tables at all, or only our schema as migrations leave it (every table one
    the backup also has, none with rows but the migration bookkeeping and the embedding spaces
    migrations seed). That is what a fresh machine holds once `memory-pipeline ui` or `run` has
    started there, and the README sends the user to restore into exactly that.
    """
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
        holds = _holds_data(conn, manifest)
    if holds:
        raise RestoreError(
            f"database {target} is not empty ({holds}); pass --force to replace it (it is dropped"
            " only after the backup restored and matched its manifest)"
        )


def _holds_data(conn: psycopg.Connection, manifest: BackupManifest | None) -> str | None:
    """None when the database holds nothing worth keeping, else what it holds (a short phrase)."""
    relations = conn.execute(
        "SELECT n.nspname, c.relname, c.relkind FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
        " AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'"
        " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass"
        "                 AND d.objid = c.oid AND d.deptype = 'e')"
    ).fetchall()
    if not relations:
        return None
    tables = {(schema, name) for schema, name, kind in relations if kind in ("r", "p")}
    ours = {t.name for t in manifest.tables} if manifest else set()
    if ("public", "schema_migrations") not in tables or manifest is None:
        return f"{len(relations)} relations"
    foreign = sorted(f"{s}.{n}" for s, n in tables if s != "public" or n not in ours)
    if foreign:
        return f"table {foreign[0]} is not part of memory-pipeline's schema"
    for _schema, name in sorted(tables):
        if name in _SEEDED_BY_MIGRATIONS:
            continue
        query = sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier("public", name))
        row = conn.execute(query).fetchone()
        if row and row[0]:
            return f"table {name} has rows"
    return None
