"""Where backups live on disk and what state each one is in.

    <backup_dir>/
        .lock                              serialises backup runs, verification and retention
        2026-03-19T033000Z/                one backup, named by its UTC start time
            database.pgdump.enc            pg_dump --format=custom, encrypted
            memories.jsonl.enc ...         JSON Lines exports, encrypted
            manifest.json.enc              what the backup holds, with checksums (written last)
            verification.json.enc          the outcome of the last restore check, if any
        .tmp-2026-03-20T033000Z-1a2b3c4d/  a backup being written (never listed as a backup)

A backup is written into a dot-prefixed temp directory and renamed into place only once its
manifest is written, so anything with a backup's name is complete. A failed run removes its temp
directory; one left by a killed process holds only ciphertext: `backup list` shows it as
interrupted (while no run holds the lock), and the next backup, `memory-pipeline run` or `ui`
removes it and says so.

Status of a backup: "verified" (its last restore check passed and was recorded for this very
manifest), "verify failed", "unverified" (complete, never checked) or "unreadable" (no manifest
that decrypts with the key). Only "verified" backups are good for retention.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from memory_pipeline.backup.crypto import (
    BackupCryptoError,
    BackupKey,
    WrongKeyError,
    read_encrypted,
    write_encrypted,
)
from memory_pipeline.backup.errors import RestoreError
from memory_pipeline.backup.manifest import (
    MANIFEST_FILENAME,
    BackupManifest,
    ManifestError,
    read_manifest,
)

DUMP_NAME = "database.pgdump.enc"
VERIFICATION_NAME = "verification.json.enc"
LOCK_NAME = ".lock"
TMP_PREFIX = ".tmp-"
ID_FORMAT = "%Y-%m-%dT%H%M%SZ"
_ID = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{6}Z)(?:-(\d+))?$")

Status = Literal["verified", "verify failed", "unverified", "unreadable"]


class Verification(BaseModel):
    """The outcome of one restore check, stored encrypted beside the backup it checked."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backup_id: str
    manifest_sha256: str  # of manifest.json.enc as checked: a replaced manifest voids the record
    verified_at: AwareDatetime
    passed: bool
    problems: list[str] = Field(default_factory=list)
    tables: int = 0
    rows: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class BackupInfo:
    id: str
    path: Path
    created_at: datetime
    bytes: int  # on disk, all files
    manifest: BackupManifest | None
    verification: Verification | None
    error: str | None = None  # why the manifest could not be read

    @property
    def status(self) -> Status:
        if self.manifest is None:
            return "unreadable"
        if self.verification is None:
            return "unverified"
        return "verified" if self.verification.passed else "verify failed"

    @property
    def good(self) -> bool:
        return self.status == "verified"


def backup_id_for(created_at: datetime) -> str:
    return created_at.astimezone(UTC).strftime(ID_FORMAT)


def new_backup_id(root: Path, created_at: datetime) -> str:
    """The id for a backup started at `created_at`; a suffix keeps two in one second apart."""
    base = backup_id_for(created_at)
    candidate, n = base, 1
    while (root / candidate).exists():
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def is_backup_name(name: str) -> bool:
    return _ID.match(name) is not None


def created_from_id(backup_id: str) -> datetime:
    match = _ID.match(backup_id)
    if not match:
        raise ValueError(f"{backup_id!r} is not a backup name")
    return datetime.strptime(match.group(1), ID_FORMAT).replace(tzinfo=UTC)


@contextmanager
def backup_lock(root: Path) -> Iterator[None]:
    """Exclusive lock over `root`: one backup, check or retention pass at a time."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(root / LOCK_NAME, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def backup_lock_if_free(root: Path) -> Iterator[bool]:
    """The backup lock if nobody holds it (True), else False at once: a backup, check or
    retention pass is running."""
    if not root.is_dir():
        yield False
        return
    with open(root / LOCK_NAME, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def interrupted_backups(root: Path) -> list[Path]:
    """Temp directories of backups whose process died before they completed (every run holds
    the backup lock while it writes one, so none is interrupted while the lock is taken)."""
    with backup_lock_if_free(root) as free:
        if not free:
            return []
        return [p for p in sorted(root.glob(f"{TMP_PREFIX}*")) if p.is_dir()]


def interrupted_started_at(path: Path) -> datetime | None:
    """When the interrupted backup in temp directory `path` was started."""
    name = path.name.removeprefix(TMP_PREFIX).rsplit("-", 1)[0]
    return created_from_id(name) if is_backup_name(name) else None


def interrupted_line(name: str) -> str:
    return (
        f"removed {name}: an unfinished backup left by a run that was killed before it "
        "completed (it held only ciphertext)"
    )


def remove_interrupted_backups(root: Path) -> list[str]:
    """Remove the temp directories of backups whose process died, unless a backup runs now."""
    with backup_lock_if_free(root) as free:
        return remove_stale_temp_dirs(root) if free else []


def remove_stale_temp_dirs(root: Path) -> list[str]:
    """Remove temp directories of runs that died; call only while holding backup_lock."""
    removed = []
    for entry in sorted(root.glob(f"{TMP_PREFIX}*")):
        if entry.is_dir():
            shutil.rmtree(entry)
            removed.append(entry.name)
    return removed


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def manifest_digest(backup: Path) -> str:
    return hashlib.sha256((backup / MANIFEST_FILENAME).read_bytes()).hexdigest()


def read_verification(backup: Path, key: BackupKey) -> Verification | None:
    """The recorded check, or None if there is none that is valid for the current manifest."""
    path = backup / VERIFICATION_NAME
    if not path.exists():
        return None
    try:
        record = Verification.model_validate_json(read_encrypted(path, key))
    except (BackupCryptoError, ValidationError):
        return None  # an unreadable record proves nothing: the backup counts as unverified
    if record.backup_id != backup.name or record.manifest_sha256 != manifest_digest(backup):
        return None
    return record


def write_verification(backup: Path, record: Verification, key: BackupKey) -> None:
    write_encrypted(backup / VERIFICATION_NAME, record.model_dump_json().encode(), key)


def inspect_backup(path: Path, key: BackupKey) -> BackupInfo:
    """Read one backup directory's manifest and verification record.

    A wrong key raises WrongKeyError: every backup would look unreadable, which is the key's
    fault, not the backups'. Damage to one backup only marks that one unreadable.
    """
    manifest, verification, error = None, None, None
    try:
        manifest = read_manifest(path / MANIFEST_FILENAME, key)
    except WrongKeyError:
        raise
    except (BackupCryptoError, ManifestError, OSError) as exc:
        error = str(exc)
    if manifest is not None:
        verification = read_verification(path, key)
    created = manifest.created_at if manifest else created_from_id(path.name)
    return BackupInfo(path.name, path, created, dir_bytes(path), manifest, verification, error)


def list_backups(root: Path, key: BackupKey) -> list[BackupInfo]:
    """Every backup under `root`, newest first. Temp and unknown entries are not backups."""
    infos = []
    wrong_key: WrongKeyError | None = None
    for name in backup_names(root):
        path = root / name
        try:
            infos.append(inspect_backup(path, key))
        except WrongKeyError as exc:
            # A manifest whose header was damaged looks like a wrong key too; only when no
            # manifest opens is it really the key.
            wrong_key = exc
            created = created_from_id(name)
            infos.append(BackupInfo(name, path, created, dir_bytes(path), None, None, str(exc)))
    if wrong_key is not None and all(i.manifest is None for i in infos):
        raise wrong_key
    return sorted(infos, key=lambda i: (i.created_at, i.id), reverse=True)


def resolve_backup(root: Path, name: str | None) -> Path:
    """A backup directory from its name (under `root`) or a path; None means the newest."""
    if name is None:
        names = backup_names(root)
        if not names:
            raise RestoreError(
                f"there is no backup in {root}; make one with `memory-pipeline backup now`"
            )
        return root / names[-1]
    candidate = Path(name).expanduser()
    path = candidate if candidate.is_dir() else root / name
    if not (path / MANIFEST_FILENAME).is_file():
        raise RestoreError(
            f"{name} is not a backup (no {MANIFEST_FILENAME}); `memory-pipeline backup list`"
            " shows the backups"
        )
    return path


def backup_names(root: Path) -> list[str]:
    """Names of the backup directories under `root`, oldest first."""
    if not root.is_dir():
        return []
    names = [p.name for p in root.iterdir() if p.is_dir() and is_backup_name(p.name)]
    return sorted(names, key=lambda n: (created_from_id(n), n))


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
