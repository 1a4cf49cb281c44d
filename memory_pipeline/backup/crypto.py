"""Encryption at rest for backups: key loading, streaming AES-256-GCM, atomic encrypted writes.

Every file a backup writes (the pg_dump, the JSONL exports, the manifest) is stored only in the
format below. Dumps can be many GB, so encryption and decryption stream in chunks: memory stays at
about two chunks whatever the file size.

File format, version 1 (integers big-endian)::

    header   magic    8 bytes   b"MPBACKUP"
             version  1 byte    1
             chunk    4 bytes   plaintext bytes per chunk (1 .. 64 MiB)
             salt    32 bytes   random per file
             check   16 bytes   key check value (below)
    chunks   AES-256-GCM ciphertext + 16-byte tag, one per chunk, back to back

Keys: HKDF-SHA256(master key, salt, info=b"memory-pipeline backup v1") gives 48 bytes: a 32-byte
file key and the 16-byte key check stored in the header. Because every file gets its own key from a
fresh 256-bit salt, chunk nonces can simply count: nonce = 4 zero bytes + the 8-byte chunk index.

Every chunk holds exactly `chunk` plaintext bytes except the last, which holds 0..`chunk` (an empty
file is a single empty last chunk). Each chunk's associated data is the whole header plus one flag
byte, 1 for the last chunk and 0 otherwise. So, with the right key:

- a flipped bit anywhere in a chunk, reordered or swapped chunks (the index is in the nonce), or a
  modified header (it is in every chunk's associated data) fail authentication;
- a truncated file ends on a chunk sealed as "not last", and data appended after the last chunk
  no longer ends on the chunk sealed as "last"; both are detected and reported as such.

The key check makes a wrong key distinguishable from damage: it is compared before any chunk is
opened, so WrongKeyError means "this key did not make this file (or the header's salt/check bytes
were changed)", and CorruptBackupError means the key is right but the data is not. The check also
commits the file to one key, which AES-GCM alone does not.

The master key is 32 random bytes, taken from MEMORY_BACKUP_KEY (64 hex digits, or base64 of the
32 bytes, standard or URL-safe alphabet, padding optional; the two are told apart by length) or
else from a key file the caller names (created 0600 on first use, holding the key as 64 hex
digits, and refused if group/world accessible). Key material is never logged or put in a message.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import io
import os
import secrets
import shutil
import stat
import struct
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from memory_pipeline.tuning import BACKUP_CHUNK_SIZE

KEY_ENV_VAR = "MEMORY_BACKUP_KEY"
KEY_BYTES = 32

MAGIC = b"MPBACKUP"
FORMAT_VERSION = 1
_HEADER = struct.Struct(">8sBI32s16s")  # magic, version, chunk size, salt, key check
HEADER_BYTES = _HEADER.size  # 61
TAG_BYTES = 16
MAX_CHUNK_SIZE = 64 * 1024 * 1024  # bounds what a (possibly hostile) header can make us allocate
_HKDF_INFO = b"memory-pipeline backup v1"
_LAST, _NOT_LAST = b"\x01", b"\x00"


class BackupCryptoError(Exception):
    """Base class for everything this module raises on purpose."""


class BackupKeyError(BackupCryptoError):
    """The backup key is missing, malformed, or stored insecurely."""


class WrongKeyError(BackupCryptoError):
    """The file was encrypted with a different key (or its header's salt/check was modified)."""


class CorruptBackupError(BackupCryptoError):
    """The key is right (or the file is not ours at all) but the data fails authentication."""


class TruncatedBackupError(CorruptBackupError):
    """Every chunk present is authentic, but the last chunk is missing."""


# --- keys ---------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class BackupKey:
    material: bytes = field(repr=False)
    source: str  # "env:MEMORY_BACKUP_KEY" or "file:<path>"; safe to log
    created: bool = False  # True when load_key just created the key file: tell the user to save it

    @property
    def fingerprint(self) -> str:
        """A short non-secret id for logs, so two runs can be seen to use the same key."""
        return hashlib.sha256(b"memory-pipeline backup key id\0" + self.material).hexdigest()[:12]

    def __repr__(self) -> str:  # never show the material, not even in tracebacks
        return f"BackupKey(source={self.source!r}, fingerprint={self.fingerprint!r})"


def generate_key_text() -> str:
    """A fresh key as 64 hex digits, the form MEMORY_BACKUP_KEY and key files use."""
    return secrets.token_bytes(KEY_BYTES).hex()


def parse_key(text: str, *, source: str) -> BackupKey:
    """Parse 64 hex digits or base64 of 32 bytes; the error names the source, never the text."""
    text = text.strip()
    raw: bytes | None = None
    if len(text) == 2 * KEY_BYTES:  # base64 of 32 bytes is 43-44 characters, never 64
        with contextlib.suppress(ValueError):
            raw = bytes.fromhex(text)
    else:
        std = text.replace("-", "+").replace("_", "/")  # accept the URL-safe alphabet too
        with contextlib.suppress(binascii.Error, ValueError):
            raw = base64.b64decode(std + "=" * (-len(std) % 4), validate=True)
    if raw is None or len(raw) != KEY_BYTES:
        raise BackupKeyError(
            f"backup key from {source} is not a {KEY_BYTES}-byte key (got {len(text)} characters):"
            f" expected {2 * KEY_BYTES} hex digits or base64 of {KEY_BYTES} bytes. Generate one"
            ' with: python -c "import secrets; print(secrets.token_hex(32))"'
        )
    return BackupKey(raw, source)


def load_key(
    key_file: Path, *, environ: Mapping[str, str] | None = None, create: bool = True
) -> BackupKey:
    """The backup key: MEMORY_BACKUP_KEY if set, else `key_file` (created 0600 if `create`).

    A set-but-empty variable is an error rather than "unset": it usually means a deployment meant
    to pass a key and failed, and silently falling back to a different key would be worse.
    Restores should pass create=False so a missing key is an error, not a fresh useless key.
    """
    env = os.environ if environ is None else environ
    if KEY_ENV_VAR in env:
        return parse_key(env[KEY_ENV_VAR], source=f"env:{KEY_ENV_VAR}")
    key_file = Path(key_file)
    created = False
    if not key_file.exists():
        if not create:
            raise BackupKeyError(
                f"no backup key: set {KEY_ENV_VAR} or put the key (64 hex digits) in {key_file}"
            )
        created = _create_key_file(key_file)
    st = os.stat(key_file)
    if not stat.S_ISREG(st.st_mode):
        raise BackupKeyError(f"backup key file {key_file} is not a regular file")
    if st.st_mode & 0o077:
        raise BackupKeyError(
            f"refusing to use backup key file {key_file}: it is accessible by group or others"
            f" (mode {stat.S_IMODE(st.st_mode):04o}); fix it with: chmod 600 {key_file}"
        )
    key = parse_key(
        key_file.read_text(encoding="ascii", errors="replace"), source=f"file:{key_file}"
    )
    return BackupKey(key.material, key.source, created)


def _create_key_file(path: Path) -> bool:
    """Create `path` holding a new key, atomically and never over an existing one.

    The key is written to a private temp name and hard-linked into place: a concurrent first run
    either wins or finds the winner's complete file, and a crash never leaves a half-written key.
    Returns False when another process created it first.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            os.fchmod(f.fileno(), 0o600)  # exact mode whatever the umask
            f.write(generate_key_text() + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        _fsync_dir(path.parent)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _derive(key: BackupKey, salt: bytes) -> tuple[bytes, bytes]:
    okm = HKDF(algorithm=hashes.SHA256(), length=48, salt=salt, info=_HKDF_INFO).derive(
        key.material
    )
    return okm[:32], okm[32:]


def _nonce(index: int) -> bytes:
    return struct.pack(">4xQ", index)


# --- encryption ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EncryptResult:
    plaintext_bytes: int
    plaintext_sha256: str  # hex; what the manifest records, computed in the same pass
    encrypted_bytes: int


@dataclass(frozen=True)
class DecryptResult:
    plaintext_bytes: int
    plaintext_sha256: str


class EncryptingWriter(io.RawIOBase):
    """A writable binary stream that encrypts into `out` in the format above.

    Hand it to anything that writes bytes (polars' write_ndjson, shutil.copyfileobj from a
    pg_dump pipe) so plaintext never touches the disk. A full chunk is sealed only once a further
    byte arrives, because whether a chunk is the last must be known when it is sealed; finish()
    seals the rest as the last chunk. close() does not finish: a writer closed by an error path or
    by garbage collection must not produce a file that looks complete.
    """

    def __init__(self, out: BinaryIO, key: BackupKey, chunk_size: int = BACKUP_CHUNK_SIZE):
        super().__init__()
        if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
            raise ValueError(f"chunk_size must be 1..{MAX_CHUNK_SIZE}, got {chunk_size}")
        salt = secrets.token_bytes(32)
        file_key, check = _derive(key, salt)
        self._header = _HEADER.pack(MAGIC, FORMAT_VERSION, chunk_size, salt, check)
        self._aead = AESGCM(file_key)
        self._out = out
        self._chunk_size = chunk_size
        self._pending = bytearray()
        self._index = 0
        self._sha = hashlib.sha256()
        self._plain = 0
        self._written = 0
        self.result: EncryptResult | None = None  # set by finish()
        self._emit(self._header)

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # b: any bytes-like object
        if self.closed or self.result is not None:
            raise ValueError("write to a closed or finished EncryptingWriter")
        data = memoryview(b).cast("B")
        self._sha.update(data)
        self._plain += len(data)
        pos = 0
        while pos < len(data):
            if len(self._pending) == self._chunk_size:  # more data follows: not the last chunk
                self._seal(_NOT_LAST)
            take = min(self._chunk_size - len(self._pending), len(data) - pos)
            self._pending += data[pos : pos + take]
            pos += take
        return len(data)

    def finish(self) -> EncryptResult:
        if self.result is None:
            self._seal(_LAST)
            self._out.flush()
            self.result = EncryptResult(self._plain, self._sha.hexdigest(), self._written)
        return self.result

    def _seal(self, flag: bytes) -> None:
        sealed = self._aead.encrypt(_nonce(self._index), bytes(self._pending), self._header + flag)
        self._emit(sealed)
        self._pending.clear()
        self._index += 1

    def _emit(self, data: bytes) -> None:
        self._out.write(data)
        self._written += len(data)


def _tmp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".tmp")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def _atomic_private_file(dest: Path) -> Iterator[BinaryIO]:
    """Write `dest.tmp` (mode 0600), then fsync and rename it to `dest`; remove it on any error."""
    dest = Path(dest)
    tmp = _tmp_path(dest)
    tmp.unlink(missing_ok=True)  # a stale one from a crashed run; O_EXCL below then ensures 0600
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
        _fsync_dir(dest.parent)
    except BaseException:  # includes KeyboardInterrupt and a Dagster run being terminated
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def encrypted_output(
    dest: Path, key: BackupKey, *, chunk_size: int = BACKUP_CHUNK_SIZE
) -> Iterator[EncryptingWriter]:
    """Yield a writer whose output becomes `dest` only if the block completes without error.

    `writer.result` holds the plaintext size and sha256 after the block. For pg_dump, check its
    exit status inside the block so a failed dump raises and leaves nothing behind::

        with encrypted_output(dest, key) as w:
            shutil.copyfileobj(proc.stdout, w, BACKUP_CHUNK_SIZE)
            if proc.wait() != 0:
                raise RuntimeError("pg_dump failed")
    """
    with _atomic_private_file(dest) as out:
        writer = EncryptingWriter(out, key, chunk_size)
        yield writer
        writer.finish()


def encrypt_stream(
    reader: BinaryIO, dest: Path, key: BackupKey, *, chunk_size: int = BACKUP_CHUNK_SIZE
) -> EncryptResult:
    """Encrypt everything `reader` yields (a file, a pipe) to `dest`, atomically."""
    with encrypted_output(dest, key, chunk_size=chunk_size) as writer:
        while block := reader.read(chunk_size):
            writer.write(block)
    assert writer.result is not None
    return writer.result


def encrypt_file(
    src: Path, dest: Path, key: BackupKey, *, chunk_size: int = BACKUP_CHUNK_SIZE
) -> EncryptResult:
    with open(src, "rb") as reader:
        return encrypt_stream(reader, dest, key, chunk_size=chunk_size)


def write_encrypted(dest: Path, data: bytes, key: BackupKey) -> EncryptResult:
    """Encrypt a small in-memory payload (the manifest) to `dest`, atomically."""
    return encrypt_stream(io.BytesIO(data), dest, key)


# --- decryption ---------------------------------------------------------------------------


def _read_exact(reader: BinaryIO, n: int) -> bytes:
    """Read n bytes, fewer only at end of file (a pipe or raw file may return short reads)."""
    parts, got = [], 0
    while got < n:
        part = reader.read(n - got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _decrypt(reader: BinaryIO, name: str, key: BackupKey, sink: BinaryIO | None) -> DecryptResult:
    header = _read_exact(reader, HEADER_BYTES)
    if len(header) < HEADER_BYTES or not header.startswith(MAGIC):
        raise CorruptBackupError(f"cannot decrypt {name}: not an encrypted memory-pipeline file")
    _, version, chunk_size, salt, check = _HEADER.unpack(header)
    if version != FORMAT_VERSION:
        raise CorruptBackupError(
            f"cannot decrypt {name}: format version {version} is not supported"
            f" (this code reads version {FORMAT_VERSION})"
        )
    if not 1 <= chunk_size <= MAX_CHUNK_SIZE:
        raise CorruptBackupError(f"cannot decrypt {name}: the header is damaged (chunk size)")
    file_key, expected = _derive(key, salt)
    if not secrets.compare_digest(check, expected):
        raise WrongKeyError(
            f"cannot decrypt {name}: wrong backup key or the file was modified"
            f" (the key check in the header does not match key {key.fingerprint} from {key.source})"
        )
    aead = AESGCM(file_key)
    sha, total, index = hashlib.sha256(), 0, 0
    frame = chunk_size + TAG_BYTES
    current = _read_exact(reader, frame)
    while True:
        # One frame of lookahead tells whether `current` is the last chunk.
        following = _read_exact(reader, frame) if len(current) == frame else b""
        last = not following
        try:
            plain = aead.decrypt(_nonce(index), current, header + (_LAST if last else _NOT_LAST))
        except InvalidTag:
            raise _diagnose(aead, name, index, current, header, last) from None
        sha.update(plain)
        total += len(plain)
        if sink is not None:
            sink.write(plain)
        if last:
            return DecryptResult(total, sha.hexdigest())
        current, index = following, index + 1


def _diagnose(
    aead: AESGCM, name: str, index: int, chunk: bytes, header: bytes, last: bool
) -> CorruptBackupError:
    """Explain a failed chunk: does it open with the opposite last-chunk flag?"""
    where = f"cannot decrypt {name}"
    if not chunk:
        return TruncatedBackupError(f"{where}: the file is truncated (no data after the header)")
    try:
        aead.decrypt(_nonce(index), chunk, header + (_NOT_LAST if last else _LAST))
    except InvalidTag:
        # A short last frame may also be a chunk cut in half: the damage cannot be told apart.
        damage = "truncated, corrupted or modified" if last else "corrupted or modified"
        return CorruptBackupError(
            f"{where}: chunk {index} failed authentication; the file was {damage}"
            " (the key is right)"
        )
    if last:
        return TruncatedBackupError(
            f"{where}: the file is truncated (it ends after chunk {index} without its last chunk)"
        )
    return CorruptBackupError(f"{where}: unexpected data after the last chunk (chunk {index})")


def decrypt_to_stream(src: Path, sink: BinaryIO | None, key: BackupKey) -> DecryptResult:
    """Decrypt `src` into `sink` chunk by chunk; with sink=None only verify it.

    Each chunk is authenticated before it is written, but truncation or damage later in the file
    is only found when reading gets there: if this raises, whatever `sink` received is invalid
    (e.g. a pg_restore fed from it must be treated as failed).
    """
    with open(src, "rb") as reader:
        return _decrypt(reader, str(src), key, sink)


def verify_file(src: Path, key: BackupKey) -> DecryptResult:
    """Authenticate every chunk of `src` and return the plaintext's size and sha256."""
    return decrypt_to_stream(src, None, key)


def decrypt_file(src: Path, dest: Path, key: BackupKey) -> DecryptResult:
    """Decrypt `src` to `dest` (mode 0600) atomically: `dest` appears only if all of it verified.

    `dest` is plaintext: put it inside plaintext_workspace().
    """
    with _atomic_private_file(dest) as out:
        return decrypt_to_stream(src, out, key)


def read_encrypted(src: Path, key: BackupKey) -> bytes:
    """Decrypt a small file (the manifest) into memory."""
    buf = io.BytesIO()
    decrypt_to_stream(src, buf, key)
    return buf.getvalue()


def is_encrypted(path: Path) -> bool:
    """Whether `path` starts like a file in this format (a cheap guard, not a verification)."""
    with open(path, "rb") as f:
        return f.read(len(MAGIC)) == MAGIC


# --- plaintext that has to touch the disk ---------------------------------------------------


@contextmanager
def plaintext_workspace(parent: Path | None = None, *, shred: bool = True) -> Iterator[Path]:
    """A fresh private directory (0700) for plaintext, always wiped and removed on exit.

    Prefer streaming into EncryptingWriter; use this only where a tool needs a real file (e.g.
    a restore check). Shredding overwrites each file with zeros before unlinking it: best effort
    only, since copy-on-write filesystems and SSDs may keep old blocks. `parent` defaults to the
    system temp dir; a tmpfs there keeps plaintext off persistent storage (swap aside).
    """
    directory = Path(tempfile.mkdtemp(prefix="memory-backup-plain-", dir=parent))  # mode 0700
    try:
        yield directory
    finally:
        if shred:
            _shred_files(directory)
        if directory.exists():  # raise if plaintext cannot be removed: that must not pass silently
            shutil.rmtree(directory)


@contextmanager
def plaintext_tempfile(
    name: str = "plaintext", parent: Path | None = None, *, shred: bool = True
) -> Iterator[Path]:
    """A path (not yet created) inside a fresh plaintext_workspace()."""
    with plaintext_workspace(parent, shred=shred) as directory:
        yield directory / name


def _shred_files(directory: Path) -> None:
    zeros = memoryview(bytes(BACKUP_CHUNK_SIZE))
    for root, _dirs, files in os.walk(directory):
        for filename in files:
            path = Path(root, filename)
            with contextlib.suppress(OSError):  # best effort; rmtree still removes it
                if path.is_symlink() or not path.is_file():
                    continue
                remaining = path.stat().st_size
                with open(path, "r+b") as f:
                    while remaining > 0:
                        remaining -= f.write(zeros[: min(remaining, len(zeros))])
                    f.flush()
                    os.fsync(f.fileno())
