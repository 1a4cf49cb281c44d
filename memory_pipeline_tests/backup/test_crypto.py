from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from memory_pipeline.backup.crypto import (
    HEADER_BYTES,
    KEY_ENV_VAR,
    TAG_BYTES,
    BackupKey,
    BackupKeyError,
    CorruptBackupError,
    TruncatedBackupError,
    WrongKeyError,
    decrypt_file,
    encrypt_file,
    encrypt_stream,
    encrypted_output,
    generate_key_text,
    is_encrypted,
    load_key,
    parse_key,
    plaintext_tempfile,
    plaintext_workspace,
    read_encrypted,
    verify_file,
    write_encrypted,
)
from memory_pipeline.tuning import BACKUP_CHUNK_SIZE

SMALL = 1024  # chunk size for tests that edit chunks by hand


@pytest.fixture
def key() -> BackupKey:
    return parse_key(generate_key_text(), source="test")


def _frames(data: bytes, chunk_size: int) -> tuple[bytes, list[bytes]]:
    frame = chunk_size + TAG_BYTES
    body = data[HEADER_BYTES:]
    return data[:HEADER_BYTES], [body[i : i + frame] for i in range(0, len(body), frame)]


def _encrypt_bytes(tmp_path: Path, data: bytes, key: BackupKey, chunk_size: int) -> Path:
    dest = tmp_path / "data.enc"
    encrypt_stream(io.BytesIO(data), dest, key, chunk_size=chunk_size)
    return dest


# --- round trips ----------------------------------------------------------------------------


def test_round_trip_multi_chunk_file(tmp_path: Path, key: BackupKey) -> None:
    plain = os.urandom(5 * BACKUP_CHUNK_SIZE + 12345)  # several MB, six chunks, last one partial
    src = tmp_path / "dump"
    src.write_bytes(plain)
    dest = tmp_path / "dump.enc"

    result = encrypt_file(src, dest, key)

    assert result.plaintext_bytes == len(plain)
    assert result.plaintext_sha256 == hashlib.sha256(plain).hexdigest()
    assert (
        result.encrypted_bytes == dest.stat().st_size == HEADER_BYTES + len(plain) + 6 * TAG_BYTES
    )
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert is_encrypted(dest) and not is_encrypted(src)
    assert plain[:4096] not in dest.read_bytes()
    out = tmp_path / "restored"
    decrypted = decrypt_file(dest, out, key)
    assert out.read_bytes() == plain
    assert decrypted.plaintext_sha256 == result.plaintext_sha256
    assert verify_file(dest, key) == decrypted


def test_round_trip_empty_file(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, b"", key, BACKUP_CHUNK_SIZE)
    assert dest.stat().st_size == HEADER_BYTES + TAG_BYTES  # one empty last chunk
    assert read_encrypted(dest, key) == b""


@pytest.mark.parametrize("chunks", [1, 3])
def test_round_trip_exactly_on_chunk_boundary(tmp_path: Path, key: BackupKey, chunks: int) -> None:
    plain = os.urandom(chunks * SMALL)
    dest = _encrypt_bytes(tmp_path, plain, key, SMALL)
    # No extra empty chunk: the last full chunk is sealed as the last one.
    assert dest.stat().st_size == HEADER_BYTES + len(plain) + chunks * TAG_BYTES
    assert read_encrypted(dest, key) == plain


def test_writer_accepts_writes_of_any_size(tmp_path: Path, key: BackupKey) -> None:
    plain = os.urandom(10 * SMALL + 7)
    dest = tmp_path / "odd.enc"
    with encrypted_output(dest, key, chunk_size=SMALL) as w:
        pos = 0
        for size in [0, 1, SMALL - 1, SMALL, 3 * SMALL + 5, 17] * 3:
            w.write(plain[pos : pos + size])
            pos += size
        w.write(memoryview(plain)[pos:])
    assert w.result is not None and w.result.plaintext_bytes == len(plain)
    assert read_encrypted(dest, key) == plain


def test_polars_writes_ndjson_straight_into_the_encryptor(tmp_path: Path, key: BackupKey) -> None:
    df = pl.DataFrame({"id": list(range(20_000)), "title": ["a memory"] * 20_000})
    dest = tmp_path / "memories.jsonl.enc"
    with encrypted_output(dest, key, chunk_size=SMALL) as w:
        df.write_ndjson(w)
    expected = df.write_ndjson().encode()
    assert read_encrypted(dest, key) == expected
    assert (
        w.result is not None and w.result.plaintext_sha256 == hashlib.sha256(expected).hexdigest()
    )


def test_encrypt_stream_from_a_pipe(tmp_path: Path, key: BackupKey) -> None:
    # How pg_dump is fed: its stdout pipe, read in short reads, never written to disk in plaintext.
    code = "import sys; sys.stdout.buffer.write(bytes(range(256)) * 10000)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    dest = tmp_path / "dump.enc"
    with encrypted_output(dest, key, chunk_size=SMALL) as w:
        while block := proc.stdout.read(SMALL):
            w.write(block)
        assert proc.wait() == 0
    assert read_encrypted(dest, key) == bytes(range(256)) * 10000


def test_manifest_sized_payload_round_trip(tmp_path: Path, key: BackupKey) -> None:
    write_encrypted(tmp_path / "m.enc", b'{"a": 1}', key)
    assert read_encrypted(tmp_path / "m.enc", key) == b'{"a": 1}'


# --- tampering --------------------------------------------------------------------------------


def test_tampered_byte_in_a_chunk_fails_authentication(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(4 * SMALL + 10), key, SMALL)
    data = bytearray(dest.read_bytes())
    data[HEADER_BYTES + 2 * (SMALL + TAG_BYTES) + 100] ^= 0x01  # inside chunk 2
    dest.write_bytes(data)
    with pytest.raises(CorruptBackupError, match="chunk 2 failed authentication") as exc:
        verify_file(dest, key)
    assert not isinstance(exc.value, TruncatedBackupError)


def test_tampered_tag_fails_authentication(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(SMALL // 2), key, SMALL)
    data = bytearray(dest.read_bytes())
    data[-1] ^= 0x80
    dest.write_bytes(data)
    with pytest.raises(CorruptBackupError, match="chunk 0"):
        verify_file(dest, key)


def test_truncated_file_missing_last_chunk(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(3 * SMALL + 10), key, SMALL)
    header, frames = _frames(dest.read_bytes(), SMALL)
    assert len(frames) == 4
    dest.write_bytes(header + b"".join(frames[:-1]))
    with pytest.raises(TruncatedBackupError, match="truncated"):
        verify_file(dest, key)


def test_truncated_file_missing_last_full_chunk(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(3 * SMALL), key, SMALL)
    header, frames = _frames(dest.read_bytes(), SMALL)
    dest.write_bytes(header + b"".join(frames[:-1]))
    with pytest.raises(TruncatedBackupError):
        verify_file(dest, key)


def test_truncated_mid_chunk_and_header_only(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(3 * SMALL), key, SMALL)
    data = dest.read_bytes()
    dest.write_bytes(data[:-100])
    with pytest.raises(CorruptBackupError):
        verify_file(dest, key)
    dest.write_bytes(data[:HEADER_BYTES])
    with pytest.raises(TruncatedBackupError):
        verify_file(dest, key)


def test_swapped_chunks_are_detected(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(4 * SMALL), key, SMALL)
    header, frames = _frames(dest.read_bytes(), SMALL)
    frames[0], frames[1] = frames[1], frames[0]
    dest.write_bytes(header + b"".join(frames))
    with pytest.raises(CorruptBackupError, match="chunk 0"):
        verify_file(dest, key)


def test_appended_data_is_detected(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(2 * SMALL), key, SMALL)
    header, frames = _frames(dest.read_bytes(), SMALL)
    dest.write_bytes(header + b"".join(frames) + frames[0])
    with pytest.raises(CorruptBackupError, match="after the last chunk"):
        verify_file(dest, key)


def test_chunks_from_another_file_are_rejected(tmp_path: Path, key: BackupKey) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _encrypt_bytes(tmp_path / "a", os.urandom(2 * SMALL), key, SMALL)
    second = _encrypt_bytes(tmp_path / "b", os.urandom(2 * SMALL), key, SMALL)
    header, _ = _frames(first.read_bytes(), SMALL)
    _, frames = _frames(second.read_bytes(), SMALL)
    first.write_bytes(header + b"".join(frames))  # same key, other file's salt: other file key
    with pytest.raises(CorruptBackupError, match="chunk 0"):
        verify_file(first, key)


def test_modified_header_is_detected(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(2 * SMALL), key, SMALL)
    data = dest.read_bytes()
    bad_size = data[:9] + (SMALL * 2).to_bytes(4, "big") + data[13:]
    dest.write_bytes(bad_size)
    with pytest.raises(CorruptBackupError):
        verify_file(dest, key)
    bad_version = data[:8] + b"\x02" + data[9:]
    dest.write_bytes(bad_version)
    with pytest.raises(CorruptBackupError, match="version 2 is not supported"):
        verify_file(dest, key)
    bad_salt = bytearray(data)
    bad_salt[20] ^= 0x01
    dest.write_bytes(bad_salt)
    with pytest.raises(WrongKeyError, match="or the file was modified"):
        verify_file(dest, key)


def test_not_an_encrypted_file(tmp_path: Path, key: BackupKey) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b'{"a": 1}\n' * 100)
    with pytest.raises(CorruptBackupError, match="not an encrypted memory-pipeline file"):
        verify_file(plain, key)
    plain.write_bytes(b"")
    with pytest.raises(CorruptBackupError, match="not an encrypted"):
        verify_file(plain, key)


def test_wrong_key_is_its_own_error(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(3 * SMALL), key, SMALL)
    other = parse_key(generate_key_text(), source="other")
    with pytest.raises(WrongKeyError) as exc:
        verify_file(dest, other)
    message = str(exc.value)
    assert message.startswith(f"cannot decrypt {dest}: wrong backup key or the file was modified")
    assert not isinstance(exc.value, CorruptBackupError)
    for material in (key.material, other.material):
        assert material.hex() not in message
        assert base64.b64encode(material).decode() not in message


# --- nothing unencrypted or partial is left behind --------------------------------------------


class _FailingReader(io.RawIOBase):
    def __init__(self, good_reads: int) -> None:
        self.left = good_reads

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.left == 0:
            raise OSError("pg_dump died")
        self.left -= 1
        return os.urandom(n)


def test_failure_mid_encrypt_leaves_nothing(tmp_path: Path, key: BackupKey) -> None:
    dest = tmp_path / "dump.enc"
    with pytest.raises(OSError, match="pg_dump died"):
        encrypt_stream(_FailingReader(good_reads=3), dest, key, chunk_size=SMALL)
    assert list(tmp_path.iterdir()) == []


def test_failure_inside_encrypted_output_keeps_previous_dest(
    tmp_path: Path, key: BackupKey
) -> None:
    dest = tmp_path / "dump.enc"
    write_encrypted(dest, b"previous backup", key)
    with pytest.raises(RuntimeError), encrypted_output(dest, key, chunk_size=SMALL) as w:
        w.write(os.urandom(5 * SMALL))
        raise RuntimeError("pg_dump exited with 1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.enc"]
    assert read_encrypted(dest, key) == b"previous backup"


def test_stale_tmp_is_replaced_with_a_private_file(tmp_path: Path, key: BackupKey) -> None:
    dest = tmp_path / "dump.enc"
    stale = tmp_path / "dump.enc.tmp"
    stale.write_bytes(b"left by a crashed run")
    stale.chmod(0o644)
    write_encrypted(dest, b"x", key)
    assert not stale.exists()
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600


def test_failed_decrypt_leaves_no_plaintext(tmp_path: Path, key: BackupKey) -> None:
    dest = _encrypt_bytes(tmp_path, os.urandom(3 * SMALL + 1), key, SMALL)
    header, frames = _frames(dest.read_bytes(), SMALL)
    dest.write_bytes(header + b"".join(frames[:-1]))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(TruncatedBackupError):
        decrypt_file(dest, out_dir / "restored", key)
    assert list(out_dir.iterdir()) == []


def test_plaintext_tempfile_is_private_and_always_removed(tmp_path: Path) -> None:
    with plaintext_tempfile("export.jsonl", parent=tmp_path) as path:
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        path.write_bytes(b"secret" * 1000)
        directory = path.parent
    assert not directory.exists()

    with pytest.raises(RuntimeError), plaintext_workspace(parent=tmp_path) as directory:
        (directory / "nested").mkdir()
        (directory / "nested" / "a").write_bytes(b"secret")
        raise RuntimeError("run failed")
    assert not directory.exists()
    assert list(tmp_path.iterdir()) == []


# --- keys -------------------------------------------------------------------------------------


def test_key_file_created_0600_and_reused(tmp_path: Path) -> None:
    key_file = tmp_path / "home" / "backup.key"
    first = load_key(key_file, environ={})
    assert first.created and first.source == f"file:{key_file}"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    assert [p.name for p in key_file.parent.iterdir()] == ["backup.key"]  # no temp left
    second = load_key(key_file, environ={})
    assert not second.created
    assert second.material == first.material and len(first.material) == 32
    assert second.fingerprint == first.fingerprint


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_group_or_world_accessible_key_file_refused(tmp_path: Path, mode: int) -> None:
    key_file = tmp_path / "backup.key"
    load_key(key_file, environ={})
    key_file.chmod(mode)
    with pytest.raises(BackupKeyError, match=re.escape(f"chmod 600 {key_file}")):
        load_key(key_file, environ={})


def test_missing_key_file_without_create(tmp_path: Path) -> None:
    with pytest.raises(BackupKeyError, match=KEY_ENV_VAR):
        load_key(tmp_path / "backup.key", environ={}, create=False)
    assert not (tmp_path / "backup.key").exists()


def test_malformed_key_file(tmp_path: Path) -> None:
    key_file = tmp_path / "backup.key"
    key_file.write_text("not a key\n")
    key_file.chmod(0o600)
    with pytest.raises(BackupKeyError, match=re.escape(f"file:{key_file}")):
        load_key(key_file, environ={})


def test_env_key_used_when_set(tmp_path: Path) -> None:
    raw = os.urandom(32)
    key_file = tmp_path / "backup.key"
    for text in (
        raw.hex(),
        raw.hex().upper(),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        f"  {raw.hex()}\n",
    ):
        key = load_key(key_file, environ={KEY_ENV_VAR: text})
        assert key.material == raw
        assert key.source == f"env:{KEY_ENV_VAR}"
    assert not key_file.exists()  # the env key wins; no key file is created


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "00" * 31,
        "00" * 33,
        "zz" * 32,
        base64.b64encode(bytes(range(31))).decode(),
        "x" * 44,
    ],
)
def test_invalid_env_key_is_a_clear_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(BackupKeyError, match=f"backup key from env:{KEY_ENV_VAR}") as exc:
        load_key(tmp_path / "backup.key", environ={KEY_ENV_VAR: text})
    if text.strip():
        assert text.strip() not in str(exc.value)
    assert not (tmp_path / "backup.key").exists()


def test_key_repr_hides_material() -> None:
    key = parse_key(generate_key_text(), source="test")
    assert key.material.hex() not in repr(key)
    assert key.material.hex() not in str(key)
    assert "fingerprint" in repr(key)
