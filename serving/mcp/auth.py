"""The HTTP transport's bearer token: one static token in MEMORY_HOME, mode 0600."""

from __future__ import annotations

import hmac
import os
import re
import secrets
import stat
from pathlib import Path

from mcp.server.auth.provider import AccessToken

from memory_pipeline.errors import UserError
from memory_pipeline.settings import Settings

TOKEN_FILE = "mcp-token"


class StaticTokenVerifier:
    """Accepts exactly one bearer token (constant-time comparison)."""

    def __init__(self, token: str) -> None:
        self._expected = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            given = token.encode()
        except UnicodeError:
            return None
        if hmac.compare_digest(given, self._expected):
            return AccessToken(token=token, client_id="memory-mcp-client", scopes=[])
        return None


def token_path(memory_home: Path | None = None) -> Path:
    return (memory_home or Settings.from_env().memory_home) / TOKEN_FILE


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_-]{32,256}")


def load_or_create_token(memory_home: Path | None = None) -> str:
    """The HTTP bearer token: created on first use (mode 0600), refused when others can read it."""
    path = token_path(memory_home)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_token(path)
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return token


def _read_token(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise UserError(f"cannot read the MCP token file {path}: {exc.strerror}") from exc
    with os.fdopen(fd) as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{path} is not a regular file; remove it to generate a new token")
        if info.st_uid != os.geteuid():
            raise UserError(f"{path} belongs to another user; remove it to generate a new token")
        if info.st_mode & 0o077:
            raise UserError(
                f"{path} is accessible to group or others (mode {stat.S_IMODE(info.st_mode):o}); "
                f"run `chmod 600 {path}` (or remove it to generate a new token)"
            )
        token = fh.read().strip()
    if not _TOKEN_CHARS.fullmatch(token):
        raise UserError(f"{path} does not hold a valid token; remove it to generate a new one")
    return token
