"""Why a connection failed, in one line, and whether trying again later can help.

psycopg gives connection failures no SQLSTATE, so the server's FATAL text (stable across
PostgreSQL 15-18) and libpq's own messages are read instead. Permanent failures (a refused
password, a role or database that does not exist) say what to run; temporary ones (the server is
down, starting, or full) say to try again. Nothing here quotes a URL: it may hold a password.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

_AUTH = (
    "password authentication failed",
    "no password supplied",
    "authentication failed",
    "peer authentication",
    "ident authentication",
    "no pg_hba.conf entry",
    "scram",
)
_TEMPORARY = (
    "connection refused",
    "timeout expired",
    "timed out",
    "could not translate host name",
    "failed to resolve host",
    "name or service not known",
    "no such file or directory",  # the Unix socket of a server that is not running
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "too many clients",
    "remaining connection slots",
    "server closed the connection",
    "terminating connection",
    "network is unreachable",
    "no route to host",
)


@dataclass(frozen=True)
class ConnectFailure:
    kind: str  # "auth", "role", "database", "unreachable", "other"
    temporary: bool
    detail: str  # the server's or libpq's one-line reason


def classify(exc: BaseException) -> ConnectFailure:
    """Read a connection error (psycopg.OperationalError, usually)."""
    detail = reason(exc)
    text = str(exc).lower()
    if 'role "' in text and '" does not exist' in text:
        return ConnectFailure("role", False, detail)
    if 'database "' in text and '" does not exist' in text:
        return ConnectFailure("database", False, detail)
    if any(marker in text for marker in _AUTH):
        return ConnectFailure("auth", False, detail)
    if any(marker in text for marker in _TEMPORARY) or isinstance(exc, TimeoutError):
        return ConnectFailure("unreachable", True, detail)
    if isinstance(exc, psycopg.OperationalError):
        return ConnectFailure("other", True, detail)
    return ConnectFailure("other", False, detail)


def reason(exc: BaseException) -> str:
    """The informative part of a libpq message: after 'failed:' and 'FATAL:', one line."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    for marker in ("FATAL:", "failed: "):
        if marker in line:
            line = line.rsplit(marker, 1)[1]
    return line.strip() or type(exc).__name__
