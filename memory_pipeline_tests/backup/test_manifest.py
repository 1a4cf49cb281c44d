from __future__ import annotations

import hashlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from memory_pipeline.backup.crypto import (
    WrongKeyError,
    encrypt_stream,
    generate_key_text,
    is_encrypted,
    parse_key,
)
from memory_pipeline.backup.manifest import (
    MANIFEST_FILENAME,
    BackupFile,
    BackupManifest,
    EmbeddingSpace,
    ManifestError,
    Migration,
    manifest_from_json,
    manifest_to_json,
    read_manifest,
    write_manifest,
)

SHA = hashlib.sha256(b"x").hexdigest()


def _manifest(**overrides) -> BackupManifest:
    fields = {
        "backup_id": "20250319T020000Z",
        "created_at": datetime(2025, 3, 19, 2, tzinfo=UTC),
        "app_version": "0.1.0",
        "migrations": [
            Migration(version="000", filename="000_schema_migrations.sql", checksum=SHA),
            Migration(version="006", filename="006_express_feedback.sql", checksum=SHA),
        ],
        "embedding_spaces": [EmbeddingSpace(space="local:all-minilm-l6-v2:384", rows=1200)],
        "files": [
            BackupFile(name="db.pgdump.enc", kind="pg_dump", sha256=SHA, bytes=123456),
            BackupFile(
                name="memories.jsonl.enc",
                kind="jsonl",
                table="memories",
                rows=1200,
                sha256=SHA,
                bytes=999,
            ),
        ],
    }
    fields.update(overrides)
    return BackupManifest(**fields)


def test_json_round_trip() -> None:
    manifest = _manifest()
    data = manifest_to_json(manifest)
    assert json.loads(data)["files"][1] == {
        "name": "memories.jsonl.enc",
        "kind": "jsonl",
        "table": "memories",
        "rows": 1200,
        "sha256": SHA,
        "bytes": 999,
    }
    assert json.loads(data)["format"] == 1
    assert manifest_from_json(data) == manifest
    assert manifest_from_json(data.decode()) == manifest
    assert manifest.schema_version == "006"
    assert manifest.file("memories.jsonl.enc").rows == 1200


def test_encrypted_on_disk_round_trip(tmp_path: Path) -> None:
    key = parse_key(generate_key_text(), source="test")
    path = tmp_path / MANIFEST_FILENAME
    write_manifest(_manifest(), path, key)
    assert is_encrypted(path)
    assert b"memories" not in path.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == [MANIFEST_FILENAME]
    assert read_manifest(path, key) == _manifest()
    with pytest.raises(WrongKeyError):
        read_manifest(path, parse_key(generate_key_text(), source="other"))


def test_entry_from_encrypt_result(tmp_path: Path) -> None:
    key = parse_key(generate_key_text(), source="test")
    payload = b'{"id": 1}\n{"id": 2}\n'
    result = encrypt_stream(io.BytesIO(payload), tmp_path / "t.jsonl.enc", key)
    entry = BackupFile.from_result("t.jsonl.enc", "jsonl", result, table="t", rows=2)
    assert entry.sha256 == hashlib.sha256(payload).hexdigest()
    assert entry.bytes == len(payload)


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "a.enc", "kind": "jsonl", "sha256": SHA, "bytes": 1},  # no table/rows
        {"name": "a.enc", "kind": "jsonl", "table": "t", "sha256": SHA, "bytes": 1},  # no rows
        {"name": "a.enc", "kind": "pg_dump", "table": "t", "sha256": SHA, "bytes": 1},
        {"name": "a.enc", "kind": "csv", "sha256": SHA, "bytes": 1},
        {"name": "../a.enc", "kind": "pg_dump", "sha256": SHA, "bytes": 1},
        {"name": "dir/a.enc", "kind": "pg_dump", "sha256": SHA, "bytes": 1},
        {"name": ".hidden", "kind": "pg_dump", "sha256": SHA, "bytes": 1},
        {"name": "a.enc", "kind": "pg_dump", "sha256": "ABC", "bytes": 1},
        {"name": "a.enc", "kind": "pg_dump", "sha256": SHA, "bytes": -1},
        {"name": "a.enc", "kind": "pg_dump", "sha256": SHA, "bytes": 1, "extra": 1},
    ],
)
def test_invalid_file_entries(entry: dict) -> None:
    with pytest.raises(ValidationError):
        BackupFile(**entry)


def test_invalid_manifests() -> None:
    dump = BackupFile(name="db.enc", kind="pg_dump", sha256=SHA, bytes=1)
    with pytest.raises(ValidationError, match="unique"):
        _manifest(files=[dump, dump])
    with pytest.raises(ValidationError, match="reserved"):
        _manifest(files=[dump.model_copy(update={"name": MANIFEST_FILENAME})])
    with pytest.raises(ValidationError):
        _manifest(created_at=datetime(2025, 3, 19, 2))  # naive
    with pytest.raises(ValidationError):
        _manifest(backup_id="../x")
    with pytest.raises(ValidationError):
        _manifest(embedding_spaces=[EmbeddingSpace(space="minilm")])
    with pytest.raises(ValidationError):
        Migration(version="001", filename="001.sql", checksum="nothex")


def test_invalid_json_and_newer_format_are_clear_errors() -> None:
    with pytest.raises(ManifestError, match=r"m\.json: invalid backup manifest"):
        manifest_from_json(b"{not json", source="m.json")
    with pytest.raises(ManifestError, match="invalid backup manifest"):
        manifest_from_json("[]")
    missing = json.loads(manifest_to_json(_manifest()))
    del missing["files"]
    with pytest.raises(ManifestError, match="files"):
        manifest_from_json(json.dumps(missing))
    newer = json.loads(manifest_to_json(_manifest()))
    newer["format"] = 2
    newer["new_field"] = "x"
    with pytest.raises(ManifestError, match="format 2 is not supported"):
        manifest_from_json(json.dumps(newer))
