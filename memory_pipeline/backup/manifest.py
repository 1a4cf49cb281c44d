"""The backup manifest: what one backup contains, enough to check and restore it elsewhere.

It records the schema (applied migrations with their checksums, so a restore can tell whether its
code matches), the embedding spaces present, and for every data file its kind, table, row count
and the size and sha256 of its plaintext; restore verification decrypts each file and compares.
`tables` holds a row count and a content checksum of every table of the database, all taken in the
same snapshot as the dump (backup/checksums.py), so a restored database can be compared with what
was dumped table by table. On disk the manifest is JSON encrypted like every other backup file
(write_manifest).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from memory_pipeline.backup.crypto import (
    BackupKey,
    EncryptResult,
    read_encrypted,
    write_encrypted,
)
from memory_pipeline.embedding.embedder import space_dims

MANIFEST_FORMAT = 1
MANIFEST_FILENAME = "manifest.json.enc"

_SHA256 = r"^[0-9a-f]{64}$"
# Safe as a directory or file name on every destination: no separators, no leading dot.
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class ManifestError(ValueError):
    """A manifest that cannot be parsed or does not describe a valid backup."""


class _Model(BaseModel):
    # Unknown fields are refused rather than ignored: a manifest from a newer format must not be
    # half-understood by an older restore.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Migration(_Model):
    version: str  # the migration file's number, e.g. "003" (schema_migrations.version)
    filename: str
    checksum: str = Field(pattern=_SHA256)  # sha256 of the file as applied


class EmbeddingSpace(_Model):
    space: str  # "<provider>:<model>:<dims>"
    rows: int | None = Field(default=None, ge=0)  # vectors stored in this space, if counted

    @field_validator("space")
    @classmethod
    def _space_name(cls, value: str) -> str:
        space_dims(value)  # raises ValueError for a malformed name
        return value


class TableChecksum(_Model):
    """One table's content as dumped: how to compute `md5` is in backup/checksums.py."""

    name: str
    rows: int = Field(ge=0)
    md5: str = Field(pattern=r"^[0-9a-f]{32}$")


class BackupFile(_Model):
    name: str = Field(pattern=_NAME)  # the encrypted file's name inside the backup directory
    kind: Literal["pg_dump", "jsonl"]
    table: str | None = None  # the exported table, for jsonl only
    rows: int | None = Field(default=None, ge=0)  # exported rows, for jsonl only
    sha256: str = Field(pattern=_SHA256)  # of the plaintext
    bytes: int = Field(ge=0)  # plaintext size

    @model_validator(mode="after")
    def _kind_fields(self) -> Self:
        if self.kind == "jsonl" and (self.table is None or self.rows is None):
            raise ValueError(f"{self.name}: a jsonl export needs its table and rows")
        if self.kind == "pg_dump" and (self.table is not None or self.rows is not None):
            raise ValueError(f"{self.name}: a pg_dump covers the whole database, not one table")
        return self

    @classmethod
    def from_result(
        cls,
        name: str,
        kind: Literal["pg_dump", "jsonl"],
        result: EncryptResult,
        *,
        table: str | None = None,
        rows: int | None = None,
    ) -> BackupFile:
        """The entry for a file just written by the encryptor, which hashed it on the way."""
        return cls(
            name=name,
            kind=kind,
            table=table,
            rows=rows,
            sha256=result.plaintext_sha256,
            bytes=result.plaintext_bytes,
        )


class BackupManifest(_Model):
    format: Literal[1] = MANIFEST_FORMAT
    backup_id: str = Field(pattern=_NAME)
    created_at: AwareDatetime
    app_version: str
    migrations: list[Migration]  # the schema version: every applied migration, in order
    embedding_spaces: list[EmbeddingSpace] = Field(default_factory=list)
    files: list[BackupFile]
    tables: list[TableChecksum] = Field(default_factory=list)  # every table, same snapshot
    database: str | None = None  # the database that was dumped
    server_version: str | None = None  # of the PostgreSQL server, e.g. "18.6"
    pg_dump_version: str | None = None  # of the pg_dump that wrote the dump
    completed_at: AwareDatetime | None = None  # when the last file was written

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        names = [f.name for f in self.files]
        if len(set(names)) != len(names):
            raise ValueError("file names in a manifest must be unique")
        if MANIFEST_FILENAME in names:
            raise ValueError(f"{MANIFEST_FILENAME} is reserved for the manifest itself")
        tables = [t.name for t in self.tables]
        if len(set(tables)) != len(tables):
            raise ValueError("table names in a manifest must be unique")
        return self

    @property
    def schema_version(self) -> str | None:
        """The newest applied migration's version, e.g. "006"."""
        return self.migrations[-1].version if self.migrations else None

    @property
    def dump(self) -> BackupFile:
        """The pg_dump file; a backup has exactly one."""
        dumps = [f for f in self.files if f.kind == "pg_dump"]
        if len(dumps) != 1:
            raise ManifestError(
                f"backup {self.backup_id}: expected one pg_dump, found {len(dumps)}"
            )
        return dumps[0]

    def file(self, name: str) -> BackupFile:
        for entry in self.files:
            if entry.name == name:
                return entry
        raise KeyError(name)


def manifest_to_json(manifest: BackupManifest) -> bytes:
    return (manifest.model_dump_json(indent=2) + "\n").encode("utf-8")


def manifest_from_json(data: bytes | str, *, source: str = "manifest") -> BackupManifest:
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise ManifestError(f"{source}: invalid backup manifest: not JSON ({exc})") from None
    # A newer format gets its own message; validation would only complain about unknown fields.
    found = raw.get("format") if isinstance(raw, dict) else None
    if isinstance(found, int) and found != MANIFEST_FORMAT:
        raise ManifestError(
            f"{source}: manifest format {found} is not supported"
            f" (this code reads format {MANIFEST_FORMAT})"
        )
    try:
        return BackupManifest.model_validate(raw)
    except ValidationError as exc:
        raise ManifestError(f"{source}: invalid backup manifest: {exc}") from None


def write_manifest(manifest: BackupManifest, path: Path, key: BackupKey) -> EncryptResult:
    """Encrypt the manifest to `path` atomically; it never exists on disk in plaintext."""
    return write_encrypted(path, manifest_to_json(manifest), key)


def read_manifest(path: Path, key: BackupKey) -> BackupManifest:
    """Decrypt and parse; crypto errors (wrong key, corruption) propagate unchanged."""
    return manifest_from_json(read_encrypted(path, key), source=str(path))
